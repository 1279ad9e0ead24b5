//! Several sandboxes at once: each its own container and limits, run in
//! parallel; a failure in one does not touch the others.

use pocketdock::{ByteSize, Engine, RunOptions, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect().await?;
    let mut spec = SandboxSpec::default();
    spec.mem = ByteSize(128 << 20);
    spec.cpu_percent = 50;
    let jobs = [
        "echo alpha",
        "echo beta; exit 2",
        "python3 -c 'print(6*7)'",
        "echo delta",
    ];
    let mut tasks = tokio::task::JoinSet::new();
    for (i, cmd) in jobs.into_iter().enumerate() {
        let (engine, spec) = (engine.clone(), spec.clone());
        tasks.spawn(async move {
            let r = Sandbox::with(&engine, &spec, |sb| async move {
                sb.run(cmd, &RunOptions::default()).await
            })
            .await;
            (i, r)
        });
    }
    let mut results = tasks.join_all().await;
    results.sort_by_key(|(i, _)| *i);
    for (i, r) in &results {
        match r {
            Ok(r) => println!("job {i}: exit {} {}", r.exit_code, r.stdout.trim()),
            Err(e) => println!("job {i}: failed: {e}"),
        }
    }
    let codes: Vec<i64> = results
        .iter()
        .map(|(_, r)| r.as_ref().map_or(-1, |r| r.exit_code))
        .collect();
    assert_eq!(codes, [0, 2, 0, 0]);
    Ok(())
}
