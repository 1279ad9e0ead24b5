//! The operational log through the binary: a call writes its line to
//! `.pocketdock/logs/pocketdock.log`, rotation keeps `logging.log_files`
//! files of at most `max_log_size`, `--log-file` and `--log-level` change
//! where and what, and a directory that is not a project stays one.

use crate::pd::Pd;

const JOB: &str = "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a:\n    run: 'true'\n";

fn logs(pd: &Pd) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(pd.path().join(".pocketdock/logs"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_call_writes_its_line_and_rotation_keeps_log_files() {
    let settings = "version: 1\nproject:\n  logging:\n    max_log_size: 200\n    log_files: 3\n";
    let pd = Pd::new()
        .file("pocketdock.yaml", settings)
        .file("job.yaml", JOB)
        .file(".pocketdock/.gitignore", "");
    pd.cmd(["validate", "job.yaml"]).code(0);
    let log = std::fs::read_to_string(pd.path().join(".pocketdock/logs/pocketdock.log")).unwrap();
    assert!(log.contains(" INFO ["), "{log}");
    assert!(log.contains("validate: exit 0 in"), "{log}");
    for _ in 0..12 {
        pd.cmd(["validate", "job.yaml"]).code(0);
    }
    assert_eq!(
        logs(&pd),
        ["pocketdock.log", "pocketdock.log.1", "pocketdock.log.2"]
    );
    for name in logs(&pd) {
        let len = std::fs::metadata(pd.path().join(".pocketdock/logs").join(&name))
            .unwrap()
            .len();
        assert!(len <= 200, "{name} has {len} bytes");
    }
    // A failing call says why, at `error`.
    pd.cmd(["validate", "missing.yaml"]).code(2);
    let log = std::fs::read_to_string(pd.path().join(".pocketdock/logs/pocketdock.log")).unwrap();
    assert!(log.contains("validate: exit 2"), "{log}");
}

#[test]
fn log_file_and_log_level_choose_where_and_what() {
    let pd = Pd::new().file("job.yaml", JOB);
    // No `.pocketdock/`: nothing is made just to log.
    pd.cmd(["validate", "job.yaml"]).code(0);
    assert!(!pd.path().join(".pocketdock").exists());

    let out = pd.path().join("elsewhere/op.log");
    let out_arg = out.display().to_string();
    pd.cmd([
        "--log-file",
        &out_arg,
        "--log-level",
        "debug",
        "validate",
        "job.yaml",
    ])
    .code(0);
    let log = std::fs::read_to_string(&out).unwrap();
    assert!(
        log.contains(" DEBUG [") && log.contains("validate: exit 0"),
        "{log}"
    );
    assert!(!pd.path().join(".pocketdock").exists());

    // The settings' level: `error` keeps a success out.
    let pd = pd.file(
        "pocketdock.yaml",
        "version: 1\nproject:\n  log_level: error\n",
    );
    std::fs::remove_file(&out).unwrap();
    pd.cmd(["--log-file", &out_arg, "validate", "job.yaml"])
        .code(0);
    assert_eq!(std::fs::read_to_string(&out).unwrap_or_default(), "");
    pd.cmd(["--log-level", "loud", "validate", "job.yaml"])
        .code(2)
        .stderr_has("possible values: debug, info, warning, error");
    let pd = pd.file(
        "pocketdock.yaml",
        "version: 1\nproject:\n  log_level: loud\n",
    );
    // Commands that read the settings (`status`) point at the mistake.
    pd.cmd(["status"])
        .code(2)
        .stderr_has("unknown log level `loud`");
}

/// Issue 45: nothing showed the operational log; `logs --ops` does, with
/// `--tail N` and `-f`.
#[test]
fn logs_ops_shows_tails_and_follows_the_operational_log() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let pd = Pd::new()
        .file("job.yaml", JOB)
        .file(".pocketdock/.gitignore", "");
    pd.cmd(["validate", "job.yaml"]).code(0);
    pd.cmd(["validate", "missing.yaml"]).code(2);
    let all = pd.cmd(["logs", "--ops"]).code(0).stdout();
    assert!(
        all.contains("validate: exit 0 in") && all.contains("validate: exit 2"),
        "{all}"
    );
    let last = pd.cmd(["logs", "--ops", "--tail", "1"]).code(0).stdout();
    assert_eq!(last.lines().count(), 1, "{last}");
    assert!(last.contains("logs: exit 0"), "{last}");
    pd.cmd(["logs", "--ops", "last"]).code(2);

    let mut follow = pd
        .command(["logs", "--ops", "-f", "--tail", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let seen = std::thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .find(|l| l.contains("validate: exit 0"))
    });
    let t = Instant::now();
    while !seen.is_finished() && t.elapsed() < Duration::from_secs(10) {
        pd.cmd(["validate", "job.yaml"]).code(0);
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = follow.kill();
    let _ = follow.wait();
    assert!(
        seen.join().unwrap().is_some(),
        "`logs --ops -f` never printed a new call's line"
    );
}
