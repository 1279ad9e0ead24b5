//! What a command used: CPU time and peak memory, measured by the
//! in-sandbox helper (or its `measure` on the engine's exec path), in a
//! command's result and in a step's record.

use pocketdock::{ExecResult, ExecVia, RunOptions, Sandbox, Via};

use crate::common::{self, instance_toml, stderr, stdout, Cleanup, TestProject};
use crate::pd::Pd;

const MIB: u64 = 1024 * 1024;

/// Burns 300 ms of CPU time, however long that takes on a busy machine,
/// in user mode: the clock is read (a system call) between long sums.
const BURN: &str = "python3 -c 'import time
t = time.process_time()
while time.process_time() - t < 0.3:
    sum(range(100000))'";

/// Writes every byte of 100 MiB, so that it is resident.
const ALLOCATE: &str = "python3 -c 'b = b\"x\" * (100 << 20); print(len(b))'";

fn exec_mode() -> bool {
    std::env::var("POCKETDOCK_EXEC_VIA").is_ok_and(|v| v == "exec")
}

async fn run(sb: &Sandbox, cmd: &str) -> ExecResult {
    let r = sb.run(cmd, &RunOptions::default()).await.expect(cmd);
    assert_eq!(r.exit_code, 0, "{cmd}: {r:?}");
    r
}

#[tokio::test]
async fn results_carry_cpu_time_and_peak_memory() {
    let engine = engine_or_skip!();
    let mut cleanup = Cleanup::new(&engine);
    let sb = common::sandbox(&engine, &mut cleanup, &common::spec("usage")).await;
    let burn = run(&sb, BURN).await;
    let big = run(&sb, ALLOCATE).await;
    let small = run(&sb, "true").await;
    // Through the helper, or (POCKETDOCK_EXEC_VIA=exec) through the
    // engine's exec wrapped in the helper's `measure`: measured either way.
    let via = if exec_mode() { Via::Exec } else { Via::Agent };
    assert_eq!((burn.via, big.via, small.via), (via, via, via));
    let user = burn.cpu_user_ms.expect("CPU time is measured");
    assert!(user >= 100, "{burn:?}");
    assert!(burn.cpu_system_ms.is_some(), "{burn:?}");
    let peak = big.peak_memory_bytes.expect("memory is measured");
    assert!(peak >= 80 * MIB, "{big:?}");
    let little = small.peak_memory_bytes.expect("and for `true` too");
    assert!(little < 20 * MIB, "{small:?}");
    // --json shows them as any other field.
    let json = serde_json::to_value(&big).unwrap();
    assert_eq!(json["peak_memory_bytes"], peak, "{json}");
    // The usage files are gone from the run directory once read.
    let leftovers = run(&sb, "ls /.pocketdock/run | grep -c usage- || true").await;
    assert_eq!(leftovers.stdout.trim(), "0", "{leftovers:?}");
    if !exec_mode() {
        // The engine's exec forced on a sandbox whose helper serves: the
        // one path that cannot tell a command's share.
        let exec = engine.with_exec_via(ExecVia::Exec);
        let r = run(&Sandbox::attach(&exec, sb.name()), "true").await;
        assert_eq!((r.via, r.peak_memory_bytes), (Via::Exec, None), "{r:?}");
    }
    sb.shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_steps_record_keeps_what_its_command_used() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "usage");
    let job = format!(
        "version: 1\nname: usage\nsandboxes:\n  box: {{}}\nsteps:\n  burn:\n    sandbox: box\n    run: |\n{}\n",
        BURN.lines()
            .map(|l| format!("      {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "-o", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let records = dir.path().join(".pocketdock/instances");
    let record = std::fs::read_dir(records).unwrap().next().unwrap().unwrap();
    let rec = instance_toml(&record.path());
    let step = &rec["steps"][0];
    let usage = step.get("usage");
    let user = usage.and_then(|u| u["cpu_user_ms"].as_integer());
    assert!(user.is_some_and(|ms| ms >= 100), "{step}");
    let peak = usage.and_then(|u| u["peak_memory_bytes"].as_integer());
    assert!(peak.is_some_and(|b| b > 0), "{step}");
    dir.assert_no_leaks().await;
}
