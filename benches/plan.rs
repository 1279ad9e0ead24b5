//! Planning speed: load and plan generated manifests of 10,000 steps.
//!
//! `cargo bench --bench plan` prints the time of each phase. No assertion:
//! the figure is for humans (the target is well under a second).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use pocketdock::manifest::{parse, Format, LoadOptions};
use pocketdock::plan::{plan, PlanOptions};

/// `sandboxes` plain sandboxes with `steps_each` steps; every 10th step also
/// needs a step on the previous sandbox.
fn flat(sandboxes: usize, steps_each: usize) -> String {
    let mut y = String::from("version: 1\nname: bench-{{ vars.n }}\nvars: {n: flat}\nsandboxes:\n");
    for s in 0..sandboxes {
        let _ = writeln!(
            y,
            "  sb{s}: {{mem: 256m, cpu: 50, env: {{N: '{{{{ vars.n }}}}'}}}}"
        );
    }
    y.push_str("steps:\n");
    for s in 0..sandboxes {
        for i in 0..steps_each {
            let _ = write!(
                y,
                "  s{s}-{i}:\n    sandbox: sb{s}\n    run: echo {{{{ job.name }}}} {i}\n"
            );
            if i % 10 == 9 && s > 0 {
                let _ = writeln!(y, "    needs: [s{s}-{}, s{}-{i}]", i - 1, s - 1);
            }
        }
    }
    y
}

/// `sandboxes` sandboxes with a 10-value matrix each and `steps_each` steps:
/// 10 × sandboxes × steps_each step instances, and 10 joins per sandbox
/// after the first: past the default limit of 10,000, so it is raised.
fn matrix(sandboxes: usize, steps_each: usize) -> String {
    let mut y = String::from(
        "version: 1\nlimits: {steps: 20000}\nvars:\n  values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\nsandboxes:\n",
    );
    for s in 0..sandboxes {
        let _ = writeln!(y, "  sb{s}:\n    image: 'img:{{{{ matrix.v }}}}'\n    matrix: {{v: '{{{{ vars.values }}}}'}}");
    }
    y.push_str("steps:\n");
    for s in 0..sandboxes {
        for i in 0..steps_each {
            let _ = writeln!(
                y,
                "  s{s}-{i}: {{sandbox: sb{s}, run: 'echo {{{{ matrix.v }}}}'}}"
            );
        }
        if s > 0 {
            let _ = writeln!(
                y,
                "  join{s}: {{sandbox: sb{s}, needs: [s{}-{}], run: x}}",
                s - 1,
                steps_each - 1
            );
        }
    }
    y
}

fn measure(label: &str, text: &str) -> Duration {
    let start = Instant::now();
    let m = parse(
        Path::new("bench.yaml"),
        text,
        Format::Yaml,
        &LoadOptions::default(),
    )
    .expect("valid manifest");
    let loaded = start.elapsed();
    let p = plan(m, &PlanOptions::default()).expect("plannable manifest");
    let total = start.elapsed();
    let waves = p.waves().len();
    println!(
        "{label:<42} {:>6} steps {:>5} sandboxes {waves:>4} waves   load {:>7.1} ms   plan {:>7.1} ms   total {:>7.1} ms",
        p.steps.len(),
        p.sandboxes.len(),
        loaded.as_secs_f64() * 1e3,
        total.saturating_sub(loaded).as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
    );
    total
}

fn main() {
    let cases = [
        ("100 sandboxes x 100 steps (YAML, 1.1 MB)", flat(100, 100)),
        (
            "10 sandboxes x 10-value matrix x 100 steps",
            matrix(10, 100),
        ),
    ];
    for (label, text) in &cases {
        // Best of three, after one warm-up.
        measure(label, text);
        let best = (0..3)
            .map(|_| measure(label, text))
            .min()
            .unwrap_or_default();
        println!(
            "{label:<42} best total: {:.1} ms\n",
            best.as_secs_f64() * 1e3
        );
    }
}
