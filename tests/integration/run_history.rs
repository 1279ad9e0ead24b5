//! A persistent sandbox's history and logs have every run of a handle that
//! logs: streamed and detached ones too, as blocking ones.

use pocketdock::sandbox::RunOptions;
use pocketdock::store::PersistentSandbox;

use crate::common::{project, Cleanup};

#[tokio::test]
async fn streamed_and_detached_runs_are_in_the_history_and_logs() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let dir = project("runhist");
    let project = pocketdock::project::Project::load(dir.path()).unwrap();
    let spec = crate::common::spec("runhist");
    let name = spec.name.clone().unwrap();
    c.add(name.clone());
    let sandbox = PersistentSandbox::create(&engine, &spec, &project)
        .await
        .expect("create a persistent sandbox");
    let opts = RunOptions::default();
    let p = sandbox
        .sandbox()
        .commands()
        .run_detached("echo detached-out; exit 3", &opts, 1 << 16)
        .await
        .unwrap();
    let done = p.wait(None).await.unwrap().expect("ended");
    assert_eq!(done.exit_code, 3);
    // Through a handle attached later, as a resumed sandbox's is.
    let again = PersistentSandbox::attach(&engine, &project, &name).expect("a record");
    let mut s = again
        .sandbox()
        .commands()
        .run_stream("echo streamed-out", &opts)
        .await
        .unwrap();
    while s.next().await.is_some() {}
    assert_eq!(s.finish().await.unwrap().exit_code, 0);

    let history = std::fs::read_to_string(sandbox.dir().join("history.jsonl")).unwrap();
    let runs: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["type"] == "run")
        .collect();
    assert_eq!(runs.len(), 2, "{history}");
    assert_eq!(runs[0]["exit"], 3, "{history}");
    assert_eq!(runs[1]["exit"], 0, "{history}");
    let logs = sandbox.dir().join("logs");
    let first = std::fs::read_to_string(logs.join(runs[0]["log"].as_str().unwrap())).unwrap();
    assert!(first.contains("] detached-out\n"), "{first}");
    let second = std::fs::read_to_string(logs.join(runs[1]["log"].as_str().unwrap())).unwrap();
    assert!(second.contains("] streamed-out\n"), "{second}");
    sandbox
        .shutdown(pocketdock::ShutdownOptions::DISCARD)
        .await
        .unwrap();
}
