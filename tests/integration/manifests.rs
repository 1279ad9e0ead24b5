//! Hostile and broken manifests through the binary (issue 15): each ends
//! in exit 2 with `file:line:col`, fast and small, never a panic, a signal
//! or a silently different job. No engine is needed: `validate` and `plan`
//! never touch one, and `apply` fails before it would.

use std::fmt::Write;

use crate::pd::Pd;

/// Run `args` and check: exit 2 with `text` on stderr.
#[track_caller]
fn refused(pd: &Pd, args: &[&str], text: &str) {
    pd.cmd(args.iter().copied()).code(2).stderr_has(text);
}

// Regression: non-ASCII text panicked `validate`, `plan` and `apply`
// (exit 101, "byte index … is not a char boundary" in yaml.rs).
#[test]
fn non_ascii_text_panicked_every_command() {
    let pd = Pd::new()
        .no_engine()
        .file("a.yaml", "x: {é}")
        .file("b.yaml", "version: 1\nname: \"résumé\"\nsandboxes:\n  s: {}\nsteps:\n  a: {run: echo 日本語 && echo 😀}\n  b: {run: \"{{ vars.nope }}\"}\n");
    for cmd in ["validate", "plan", "apply"] {
        pd.cmd([cmd, "a.yaml"])
            .code(2)
            .stderr_has("a.yaml:1:1: error: unknown key `x`");
        pd.cmd([cmd, "b.yaml"])
            .code(2)
            .stderr_has("b.yaml:7:16: error: undefined variable `vars.nope`");
    }
}

// Regression: `run: echo hi\0; rm -rf /tmp/x` validated, and `apply` ran
// `echo hi` alone: the NUL ended the manifest and the later steps vanished.
#[test]
fn nul_byte_silently_truncated_the_manifest() {
    let pd = Pd::new().no_engine().file(
        "job.yaml",
        b"version: 1\nsandboxes:\n  s: {}\nsteps:\n  a:\n    run: echo hi\0; rm -rf /tmp/x\n  b: {run: echo b}\n".as_slice(),
    );
    for cmd in ["validate", "apply"] {
        refused(
            &pd,
            &[cmd, "job.yaml"],
            "job.yaml:6:17: error: the manifest contains a NUL byte",
        );
    }
}

// Regression: a BOM broke a valid manifest; non-UTF-8 input had no
// position; an empty value was reported on the next line.
#[test]
fn encodings_and_empty_values_lied_about_positions() {
    let pd = Pd::new()
        .no_engine()
        .file(
            "bom.yaml",
            "\u{feff}version: 1\nsandboxes:\n  s: {}\nsteps:\n  a: {run: echo}\n",
        )
        .file(
            "latin1.yaml",
            b"version: 1\nname: r\xe9sum\xe9\n".as_slice(),
        )
        .file(
            "empty.yaml",
            "version: 1\nsandboxes:\n  s:\n    mem:\n    cpu: 10\n",
        );
    pd.cmd(["validate", "bom.yaml"]).code(0);
    refused(
        &pd,
        &["validate", "latin1.yaml"],
        "latin1.yaml:2:8: error: the manifest is not UTF-8",
    );
    refused(
        &pd,
        &["validate", "empty.yaml"],
        "empty.yaml:4:9: error: `mem` must be a string, found nothing",
    );
}

/// `pocketdock args` exits 2 with its heap capped at 200 MiB
/// (`ulimit -d`): a runaway allocation aborts here instead of passing.
/// Times are measured in docs/reliability.md, not asserted.
fn check_small(pd: &Pd, args: &[&str]) {
    let out = std::process::Command::new("/usr/bin/env")
        .arg("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -d 204800; exec {} {}",
            crate::common::bin().display(),
            args.join(" ")
        ))
        .current_dir(pd.path())
        .env("POCKETDOCK_SOCKET", "/nonexistent.sock")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
}

// Regression: YAML nested ~10,000 deep and KDL ~1,400 deep died of a stack
// overflow (SIGABRT, no message); a 585-byte alias bomb grew past 10 GB;
// `validate /dev/zero` read 8 GB; three matrix axes of 1000 aborted on a
// 72 GB allocation; a template loop of 10^8 in `name` took 10 s; one
// `'x' * 10**8` or a doubling loop built hundreds of MB.
#[test]
fn hostile_inputs_blew_the_stack_the_memory_or_the_clock() {
    let n = 100_000;
    let lol = {
        let mut t = String::from(
            "version: 1\nvars:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
        );
        for (p, c) in ["a", "b", "c", "d", "e", "f", "g", "h"]
            .iter()
            .zip(["b", "c", "d", "e", "f", "g", "h", "i"])
        {
            let items = vec![format!("*{p}"); 9].join(", ");
            writeln!(t, "  {c}: &{c} [{items}]").unwrap();
        }
        t
    };
    let axis = (0..1000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let loop9 = "{% for i in range(100000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}";
    let repeat = "{{ ('x' * 10**8) | length }}";
    let double = "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}";
    let indent = "{{ ('a' ~ '\\n' ~ 'b') | indent(10**9) | length }}";
    let pd = Pd::new()
        .file("block.yaml", format!("version: 1\nvars:\n  x:\n    {}x\n", "- ".repeat(n)))
        .file("flow.yaml", format!("version: 1\nvars:\n  x: {}{}\n", "{a: ".repeat(n), "}".repeat(n)))
        .file("deep.kdl", format!("version 1\nvars {{\n{}{}\n}}\n", "a {".repeat(n), "}".repeat(n)))
        .file("bomb.yaml", lol)
        .file("m6.yaml", format!("version: 1\nsandboxes:\n  s:\n    matrix: {{a: [{axis}], b: [{axis}]}}\n"))
        .file("m9.yaml", format!("version: 1\nvars: {{l: [{axis}]}}\nsandboxes:\n  s:\n    matrix: {{a: '{{{{ vars.l }}}}', b: '{{{{ vars.l }}}}', c: '{{{{ vars.l }}}}'}}\n"))
        .file("big.yaml", format!("version: 1\nvars:\n{}", format!("  v: {}\n", "x".repeat(60)).repeat(800_000)))
        .file("name.yaml", format!("version: 1\nname: \"{loop9}\"\n"))
        .file("step.yaml", format!("version: 1\nsandboxes:\n  s: {{}}\nsteps:\n  a: {{run: \"{loop9}\"}}\n"))
        .file("repeat.yaml", format!("version: 1\nname: \"{repeat}\"\n"))
        .file("double.yaml", format!("version: 1\nlimits: {{template_fuel: 1000000}}\nname: \"{double}\"\n"))
        .file("indent.yaml", format!("version: 1\nname: \"{indent}\"\n"));
    let cases: [(&str, &str); 13] = [
        ("block.yaml", "block.yaml:4:"),
        ("flow.yaml", "more than 64 deep"),
        (
            "deep.kdl",
            "deep.kdl:3:192: error: the manifest nests nodes more than 64 deep",
        ),
        ("bomb.yaml", "aliases copy more than 10000 nodes"),
        (
            "m6.yaml",
            "m6.yaml:4:17: error: sandbox `s` has 1000000 matrix combinations",
        ),
        (
            "m9.yaml",
            "1000000000 matrix combinations, more than the `matrix` limit of 1000",
        ),
        ("big.yaml", "larger than 4194304 bytes"),
        ("/dev/zero", "/dev/zero is a device, not a regular file"),
        ("name.yaml", "the `template_fuel` limit"),
        ("step.yaml", "this loop runs 1000000000 times"),
        ("repeat.yaml", "the `template_fuel` limit of 100000"),
        ("double.yaml", "the `template_fuel` limit of 1000000"),
        ("indent.yaml", "the `template_fuel` limit of 100000"),
    ];
    for (file, text) in cases {
        refused(&pd, &["validate", file], text);
        check_small(&pd, &["validate", file]);
    }
    // The user's limit is the one reported.
    refused(
        &pd,
        &["validate", "--limit", "aliases=20000", "bomb.yaml"],
        "more than 20000 nodes",
    );
}

// Regression: `validate` accepted unknown filters, tests and bad arguments
// in step templates, and `apply` failed later (exit 1), once after a
// container was created and an earlier step had run.
#[test]
fn validate_missed_step_filter_mistakes_that_apply_hit_later() {
    let pd = Pd::new().no_engine().file(
        "job.yaml",
        "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a: {run: echo}\n  b: {run: \"echo {{ job.id | uper }}\"}\n  c:\n    run: echo\n    if: job.id is evn\n  d: {run: \"{{ job.id | replace('a') }}\"}\n",
    );
    for cmd in ["validate", "apply"] {
        pd.cmd([cmd, "job.yaml"])
            .code(2)
            .stderr_has("job.yaml:6:30: error: unknown filter `uper`")
            .stderr_has("job.yaml:9:19: error: unknown test `evn`")
            .stderr_has("job.yaml:10:25: error: filter `replace` takes 2 arguments, given 1");
    }
}

// Regression: `volumes: ["../../../:/host"]` mounted the host's root.
#[test]
fn volume_sources_escaped_the_project() {
    let pd = Pd::new()
        .no_engine()
        .file("job.yaml", "version: 1\nsandboxes:\n  s:\n    volumes: ['../../../:/host']\nsteps:\n  a: {run: echo}\n")
        .file("inside.yaml", "version: 1\nsandboxes:\n  s:\n    volumes: ['./data:/data']\nsteps:\n  a: {run: echo}\n");
    for cmd in ["validate", "plan", "apply"] {
        pd.cmd([cmd, "job.yaml"])
            .code(2)
            .stderr_has("job.yaml:4:15: error: volume source: host path")
            .stderr_has("is outside the project (it leads to `/`)")
            .stderr_has("--allow-host-path /");
    }
    pd.cmd(["validate", "inside.yaml"]).code(0);
    pd.cmd(["validate", "--allow-host-path", "/", "job.yaml"])
        .code(0);
    // The user's settings may allow it; the manifest's own may not.
    let pd = pd
        .file("pocketdock.yaml", "version: 1\nproject:\n  allow_host_paths: [/]\nsandboxes:\n  s:\n    volumes: ['/:/host']\n")
        .file("sub/job.yaml", "version: 1\nsandboxes:\n  s:\n    volumes: ['../../../../:/host']\n");
    pd.cmd(["validate", "sub/job.yaml"]).code(0);
    pd.cmd(["validate", "pocketdock.yaml"])
        .code(2)
        .stderr_has("pocketdock.yaml:6:15: error: volume source");
}

// Regression: `apply --jobs 0` silently ran with 1.
#[test]
fn jobs_zero_was_silently_one() {
    Pd::new()
        .no_engine()
        .file(
            "job.yaml",
            "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a: {run: echo}\n",
        )
        .args(["apply", "--parallel", "0", "job.yaml"])
        .code(2)
        .stderr_has("must be at least 1");
}

#[test]
fn limit_flags_are_checked() {
    let pd = Pd::new().no_engine().file("job.yaml", "version: 1\n");
    pd.cmd(["validate", "--limit", "nope=3", "job.yaml"])
        .code(2)
        .stderr_has("known limits are");
    pd.cmd(["validate", "--limit", "matrix=0", "job.yaml"])
        .code(2)
        .stderr_has("at least 1");
    pd.cmd(["validate", "--limit", "matrix=5", "job.yaml"])
        .code(0);
}

// Regression: a FIFO given as the manifest (or as `--vars-file`) hung
// `validate` waiting for a writer; a YAML tag (`!!python/object`) was
// accepted silently.
#[test]
fn fifos_and_yaml_tags_are_refused() {
    let pd = Pd::new()
        .no_engine()
        .file(
            "job.yaml",
            "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a: {run: echo}\n",
        )
        .file(
            "tagged.yaml",
            "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a: {run: !!python/object:os.system echo}\n",
        );
    let made = std::process::Command::new("mkfifo")
        .arg(pd.path().join("pipe.yaml"))
        .status()
        .unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    for cmd in ["validate", "plan"] {
        refused(
            &pd,
            &[cmd, "pipe.yaml"],
            "pipe.yaml is a FIFO (named pipe), not a regular file",
        );
        refused(
            &pd,
            &[cmd, "job.yaml", "--vars-file", "pipe.yaml"],
            "pipe.yaml is a FIFO (named pipe), not a regular file",
        );
        refused(
            &pd,
            &[cmd, "tagged.yaml"],
            "tagged.yaml:5:12: error: YAML tag `!!python/object:os.system` is not supported",
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

// Regression: `validate` and `plan` accepted a push source or pull
// destination outside the project and a push source that does not exist;
// `apply` refused them only after creating the sandboxes.
#[test]
fn step_host_paths_are_checked_before_anything_runs() {
    let job = |body: &str| format!("version: 1\nsandboxes:\n  s: {{}}\nsteps:\n  a:\n    {body}\n");
    let pd = Pd::new()
        .no_engine()
        .file("here.txt", "x")
        .file(
            "push-out.yaml",
            job("push: {src: ../../../etc/hostname, dst: /tmp/h}"),
        )
        .file(
            "pull-out.yaml",
            job("pull: {src: /etc/hostname, dst: /tmp/stolen}"),
        )
        .file(
            "push-missing.yaml",
            job("push: {src: nope.txt, dst: /tmp/n}"),
        )
        .file(
            "stdin-missing.yaml",
            job("run: {cmd: cat, stdin: {file: nope.json}}"),
        )
        .file(
            "stdin-out.yaml",
            job("run: {cmd: cat, stdin: {file: /etc/hostname}}"),
        )
        .file(
            "fine.yaml",
            "version: 1\nvars: {f: later.txt}\nsandboxes:\n  s: {}\nsteps:\n  \
             a: {push: {src: here.txt, dst: /tmp/h}}\n  \
             b: {pull: {src: /etc/hostname, dst: out/}}\n  \
             c: {push: {src: out/hostname, dst: /tmp/h2}}\n  \
             d: {push: {src: '{{ vars.f }}', dst: /tmp/h3}}\n  \
             e: {run: {cmd: cat, stdin: {file: here.txt}}}\n",
        );
    for cmd in ["validate", "plan", "apply"] {
        refused(
            &pd,
            &[cmd, "push-out.yaml"],
            "push-out.yaml:6:17: error: push source: host path",
        );
        refused(
            &pd,
            &[cmd, "pull-out.yaml"],
            "pull-out.yaml:6:37: error: pull destination: host path `/tmp/stolen` is outside the project",
        );
        refused(
            &pd,
            &[cmd, "push-missing.yaml"],
            "push-missing.yaml:6:17: error: push source `nope.txt` does not exist",
        );
        refused(
            &pd,
            &[cmd, "stdin-missing.yaml"],
            "stdin-missing.yaml:6:35: error: stdin file `nope.json` does not exist",
        );
        refused(
            &pd,
            &[cmd, "stdin-out.yaml"],
            "stdin-out.yaml:6:35: error: stdin file: host path",
        );
    }
    pd.cmd(["validate", "fine.yaml"]).code(0);
    pd.cmd(["validate", "--allow-host-path", "/tmp", "pull-out.yaml"])
        .code(0);
    assert!(
        !pd.path().join(".pocketdock").exists(),
        "apply created a record"
    );
}
