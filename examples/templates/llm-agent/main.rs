//! An LLM agent loop: the model writes Python, a sandbox runs it, the
//! result goes back to the model, until it answers without code.
//!
//! The model is a command you configure: `AGENT_MODEL` is run with the
//! conversation as JSON (`[{"role": ..., "content": ...}]`) on stdin and
//! prints its next reply. Unset, the recorded conversation in
//! `conversation.json` is replayed, so the loop runs offline.
//!
//! `cargo run --example llm-agent`

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use pocketdock::{Engine, Sandbox, SandboxSpec};
use serde_json::{json, Value};

const RECORDED: &str = include_str!("conversation.json");
const MAX_TURNS: usize = 8;

/// The next reply: from the configured command, or the recording.
fn ask(model: Option<&str>, messages: &[Value], turn: usize) -> Result<String, String> {
    let Some(cmd) = model else {
        let recorded: Value = serde_json::from_str(RECORDED).map_err(|e| e.to_string())?;
        return recorded["replies"][turn]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("the recording has no reply {turn}"));
    };
    let mut child = Command::new("sh")
        .args(["-c", cmd])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the model `{cmd}`: {e}"))?;
    let input = serde_json::to_vec(messages).map_err(|e| e.to_string())?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(&input)
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("the model `{cmd}` failed: {}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The first ```python block of a reply, if any.
fn code_in(reply: &str) -> Option<&str> {
    let start = reply.find("```python\n")? + "```python\n".len();
    let len = reply[start..].find("```")?;
    Some(&reply[start..start + len])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = std::env::var("AGENT_MODEL").ok();
    let recorded: Value = serde_json::from_str(RECORDED)?;
    let task = recorded["task"].as_str().unwrap_or_default().to_string();
    let engine = Engine::connect().await?;
    let configured = model.is_some();
    // No network, limited memory: the model's code cannot reach anything.
    let answer = Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
        let kernel = sb.kernel().await?;
        let mut messages = vec![json!({"role": "user", "content": task})];
        println!("task: {task}\n");
        for turn in 0..MAX_TURNS {
            let reply = ask(model.as_deref(), &messages, turn)?;
            println!("model: {reply}\n");
            messages.push(json!({"role": "assistant", "content": reply}));
            let Some(code) = code_in(&reply) else {
                return Ok::<_, Box<dyn std::error::Error>>(reply);
            };
            let r = kernel.exec(code, Some(Duration::from_secs(20))).await?;
            let observation = format!(
                "output:\n{}\nresult: {}\nerror: {}{}",
                r.output,
                r.result.as_deref().unwrap_or("none"),
                r.error.as_deref().unwrap_or("none"),
                if r.timed_out {
                    "\n(timed out after 20 s)"
                } else {
                    ""
                },
            );
            println!("sandbox: {observation}\n");
            messages.push(json!({"role": "user", "content": observation}));
        }
        Err(format!("no answer after {MAX_TURNS} turns").into())
    })
    .await?;
    assert!(configured || answer.contains("24133"), "{answer}");
    Ok(())
}
