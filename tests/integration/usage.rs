//! What a command used: CPU time and peak memory, measured by the
//! in-sandbox helper, in a command's result and in a step's record; none
//! through the engine's exec (`POCKETDOCK_EXEC_VIA=exec`).

use pocketdock::{ExecResult, RunOptions, Sandbox};

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
    if exec_mode() {
        for r in [&burn, &big, &small] {
            let figures = (r.cpu_user_ms, r.cpu_system_ms, r.peak_memory_bytes);
            assert_eq!(figures, (None, None, None), "{r:?}");
        }
    } else {
        let user = burn.cpu_user_ms.expect("the helper measures CPU time");
        assert!(user >= 100, "{burn:?}");
        assert!(burn.cpu_system_ms.is_some(), "{burn:?}");
        let peak = big.peak_memory_bytes.expect("the helper measures memory");
        assert!(peak >= 80 * MIB, "{big:?}");
        let little = small.peak_memory_bytes.expect("and for `true` too");
        assert!(little < 20 * MIB, "{small:?}");
        // --json shows them as any other field.
        let json = serde_json::to_value(&big).unwrap();
        assert_eq!(json["peak_memory_bytes"], peak, "{json}");
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
    if exec_mode() {
        assert!(usage.is_none(), "{step}");
    } else {
        let user = usage.and_then(|u| u["cpu_user_ms"].as_integer());
        assert!(user.is_some_and(|ms| ms >= 100), "{step}");
        let peak = usage.and_then(|u| u["peak_memory_bytes"].as_integer());
        assert!(peak.is_some_and(|b| b > 0), "{step}");
    }
    dir.assert_no_leaks().await;
}
