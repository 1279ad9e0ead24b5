//! Several agents at once, each in its own sandbox, reporting through
//! callbacks: output lines and exits arrive in one feed as they happen,
//! and a failing agent does not stop the others.
//!
//! `cargo run --example multi-agent`

use std::time::Duration;

use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};
use tokio::sync::mpsc;

/// What each agent does: a name and a shell script.
const AGENTS: [(&str, &str); 3] = [
    (
        "fetcher",
        "for f in a b c; do echo \"got $f\"; sleep 0.2; done",
    ),
    (
        "counter",
        "python3 -c 'import time\nfor i in range(3):\n print(\"count\", i); time.sleep(0.3)'",
    ),
    (
        "flaky",
        "echo trying; sleep 0.4; echo 'gave up' >&2; exit 3",
    ),
];

#[derive(Debug)]
enum Report {
    Line(String, String),
    Exit(String, i64),
}

#[tokio::main]
async fn main() -> pocketdock::Result<()> {
    let engine = Engine::connect().await?;
    let (tx, mut feed) = mpsc::unbounded_channel();
    let mut agents = tokio::task::JoinSet::new();
    for (agent, script) in AGENTS {
        let (engine, tx) = (engine.clone(), tx.clone());
        agents.spawn(async move {
            Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
                // Callbacks run as output arrives; they only send to the feed.
                let lines = tx.clone();
                sb.commands().on_stdout(move |_, data| {
                    for line in String::from_utf8_lossy(data).lines() {
                        let _ = lines.send(Report::Line(agent.into(), line.into()));
                    }
                });
                sb.commands().on_exit(move |_, code| {
                    let _ = tx.send(Report::Exit(agent.into(), code));
                });
                let process = sb
                    .commands()
                    .run_detached(script, &RunOptions::default(), 64 * 1024)
                    .await?;
                process.wait(Some(Duration::from_mins(1))).await
            })
            .await
        });
    }
    drop(tx);

    // The coordinator: one live feed from every sandbox.
    let mut exits = Vec::new();
    while let Some(report) = feed.recv().await {
        match report {
            Report::Line(agent, line) => println!("[{agent}] {line}"),
            Report::Exit(agent, code) => {
                println!("[{agent}] exited with {code}");
                exits.push((agent, code));
            }
        }
    }
    for finished in agents.join_all().await {
        finished?;
    }
    exits.sort();
    println!("summary: {exits:?}");
    let codes: Vec<i64> = exits.iter().map(|(_, c)| *c).collect();
    assert_eq!(codes, [0, 0, 3], "counter, fetcher, flaky");
    Ok(())
}
