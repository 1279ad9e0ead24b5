//! `pocketdock serve` end to end, with a real HTTP client: runs started,
//! followed over SSE, read, cancelled (the server's own and a CLI's),
//! replayed after a restart; and the security rules.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{project, start_long_job, TestProject};
use crate::pd::Pd;

/// A running `pocketdock serve`, stopped (SIGTERM) when dropped.
pub struct Server {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub client: reqwest::Client,
}

impl Server {
    /// Start a server in `dir` on a free loopback port, with `extra` arguments.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Server::start_as(&Pd::at(dir), extra)
    }

    /// [`Server::start`] as `pd` runs it (its directory, its environment).
    pub fn start_as(pd: &Pd, extra: &[&str]) -> Server {
        let mut child = pd
            .command(["serve", "--listen", "127.0.0.1:0", "--drain-timeout", "0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let base = loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("the server did not start:\n{seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(at) = line.find("http://") {
                break line[at..].split('/').take(3).collect::<Vec<_>>().join("/");
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Server {
            child: Some(child),
            base,
            client: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let r = self.get(path).await;
        assert!(r.status().is_success(), "GET {path}: {}", r.status());
        r.json().await.unwrap()
    }

    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Stop it as Ctrl-C would; its exit code.
    pub fn stop(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        child.wait().ok()?.code()
    }

    /// Kill it outright (SIGKILL): nothing may be lost.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The events of an SSE body: (id, JSON data).
pub fn sse_events(body: &str) -> Vec<(u64, Value)> {
    let mut out = Vec::new();
    for block in body.split("\n\n") {
        let mut id = None;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        if let (Some(id), false) = (id, data.is_empty()) {
            out.push((id, serde_json::from_str(&data).unwrap()));
        }
    }
    out
}

/// A run's whole event stream (it ends when the job has).
pub async fn events(server: &Server, id: &str, last: Option<u64>) -> Vec<(u64, Value)> {
    let mut req = server
        .client
        .get(server.url(&format!("/v1/runs/{id}/events")));
    if let Some(n) = last {
        req = req.header("Last-Event-ID", n.to_string());
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let body = tokio::time::timeout(Duration::from_mins(2), r.text())
        .await
        .expect("the event stream never ended")
        .unwrap();
    sse_events(&body)
}

/// Poll a run until its status is not `running`; its record.
pub async fn until_ended(server: &Server, id: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let rec = server.get_json(&format!("/v1/runs/{id}")).await;
        if rec["status"] != "running" || Instant::now() > deadline {
            return rec;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const TWO_SANDBOXES: &str = "version: 1
name: two
sandboxes:
  a: {}
  b: {}
steps:
  one:
    sandbox: a
    run: echo hello from a; mkdir -p /tmp/o; echo artifact > /tmp/o/x.txt
  two:
    sandbox: b
    run: echo hello from b
  get:
    sandbox: a
    needs: [one]
    pull: { src: /tmp/o/x.txt, dst: out/x.txt }
";

const LONG: &str = "version: 1
name: long
sandboxes:
  box: {}
steps:
  wait:
    run: sleep 120 & sleep 120
    timeout: 300
";

#[tokio::test]
async fn a_two_sandbox_job_runs_streams_reads_and_replays_after_a_restart() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "serve");
    std::fs::write(dir.path().join("two.yaml"), TWO_SANDBOXES).unwrap();
    let mut server = Server::start(dir.path(), &[]);

    let r = server
        .post("/v1/runs", &json!({ "manifest": "two.yaml" }))
        .await;
    assert_eq!(r.status(), 202);
    let started: Value = r.json().await.unwrap();
    let id = started["id"].as_str().unwrap().to_string();
    assert_eq!(id, "two-0001");
    // The answers link to the jobs' own paths (`/v1/runs` stays an alias).
    assert_eq!(started["urls"]["events"], "/v1/jobs/two-0001/events");
    assert_eq!(started["urls"]["job"], "/v1/jobs/two-0001");

    // Live: the stream follows the job to its end.
    let live = events(&server, &id, None).await;
    let kinds: Vec<&str> = live
        .iter()
        .map(|(_, e)| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"job_started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"job_finished"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "sandbox_created").count(), 2);
    let ids: Vec<u64> = live.iter().map(|(n, _)| *n).collect();
    assert_eq!(ids, (1..=live.len() as u64).collect::<Vec<_>>());
    assert_eq!(live.last().unwrap().1["status"], "succeeded");

    // The record, a step log, an artifact.
    let rec = server.get_json(&format!("/v1/runs/{id}")).await;
    assert_eq!(rec["status"], "succeeded");
    assert_eq!(rec["steps"].as_array().unwrap().len(), 3);
    let log = server.get(&format!("/v1/runs/{id}/steps/one@a/log")).await;
    assert_eq!(log.status(), 200);
    assert!(log.text().await.unwrap().contains("hello from a"));
    let followed = server
        .get(&format!("/v1/runs/{id}/steps/two@b/log?follow=1"))
        .await;
    assert!(followed.text().await.unwrap().contains("hello from b"));
    let art = server
        .get(&format!("/v1/runs/{id}/artifacts/out/x.txt"))
        .await;
    assert_eq!(art.status(), 200);
    assert_eq!(art.text().await.unwrap(), "artifact\n");
    // Each artifact names its path in the project and the URL serving it;
    // `path` stays the host path the record holds.
    let a = &rec["artifacts"][0];
    assert_eq!(a["project_path"], "out/x.txt");
    assert_eq!(a["url"], format!("/v1/jobs/{id}/artifacts/out/x.txt"));
    assert!(std::path::Path::new(a["path"].as_str().unwrap()).is_absolute());
    let by_url = server.get(a["url"].as_str().unwrap()).await;
    assert_eq!(by_url.text().await.unwrap(), "artifact\n");
    let list = server.get_json("/v1/runs?limit=10").await;
    assert_eq!(list["runs"][0]["id"], id);
    dir.assert_no_leaks().await;

    // Killed and restarted: the same events, and a resumed stream has no
    // gap and no duplicate.
    server.kill();
    let server = Server::start(dir.path(), &[]);
    let replay = events(&server, &id, None).await;
    assert_eq!(replay, live);
    let resumed = events(&server, &id, Some(4)).await;
    assert_eq!(resumed, live[4..].to_vec());
    let list = server.get_json("/v1/runs").await;
    assert_eq!(list["runs"][0]["id"], id);
}

#[tokio::test]
async fn a_manifest_with_mistakes_is_422_with_diagnostics_and_nothing_runs() {
    let _engine = engine_or_skip!();
    let dir = project("serve");
    let server = Server::start(dir.path(), &[]);
    let r = server
        .post(
            "/v1/runs",
            &json!({ "manifest_text": "version: 1\nname: bad\nsandboxes:\n  box: {}\nsteps:\n  s:\n    runn: echo\n" }),
        )
        .await;
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    let d = &body["diagnostics"][0];
    assert_eq!(d["line"], 7, "{body}");
    assert!(d["col"].as_u64().is_some());
    assert!(d["message"].as_str().unwrap().contains("runn"), "{body}");
    assert!(!dir.path().join(".pocketdock/instances/bad-0001").exists());
    let list = server.get_json("/v1/runs").await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn a_long_job_is_cancelled_through_the_api_and_leaves_no_container() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "serve");
    std::fs::write(dir.path().join("long.yaml"), LONG).unwrap();
    let server = Server::start(dir.path(), &[]);
    let r = server
        .post("/v1/runs", &json!({ "manifest": "long.yaml" }))
        .await;
    assert_eq!(r.status(), 202);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The stream is live: `step_started` arrives while the job still runs.
    let mut live = server.get(&format!("/v1/runs/{id}/events")).await;
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_mins(1);
    while !seen.contains(r#""event":"step_started""#) {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, live.chunk())
            .await
            .expect("no step_started arrived while the job ran")
            .unwrap()
            .expect("the stream ended before the step started");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(!seen.contains("job_finished"), "{seen}");
    // The server's own job is live, never `abandoned`.
    let list = server.get_json("/v1/runs").await;
    assert_eq!(list["runs"][0]["status"], "running");

    let r = server
        .post(&format!("/v1/runs/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(r.status(), 202);
    assert_eq!(r.json::<Value>().await.unwrap()["runner"], "server");
    let rec = until_ended(&server, &id, Duration::from_secs(30)).await;
    assert_eq!(rec["status"], "cancelled", "{rec}");
    assert_eq!(rec["steps"][0]["status"], "cancelled");
    dir.assert_no_leaks().await;
    let again = server
        .post(&format!("/v1/runs/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(again.status(), 409);
}

#[tokio::test]
async fn a_run_of_the_cli_is_listed_and_cancelled_through_the_api() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "serve");
    let server = Server::start(dir.path(), &[]);
    let (child, record) = start_long_job(dir.path(), "cli");
    let id = record.file_name().unwrap().to_string_lossy().into_owned();
    let list = server.get_json("/v1/runs").await;
    assert_eq!(list["runs"][0]["id"], id.as_str());
    assert_eq!(list["runs"][0]["status"], "running");

    let r = server
        .post(&format!("/v1/runs/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(r.status(), 202);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["runner"], "cli");
    assert_eq!(body["pid"], child.id());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let rec = until_ended(&server, &id, Duration::from_secs(30)).await;
    assert_eq!(rec["status"], "cancelled", "{rec}");
    dir.assert_no_leaks().await;
    // Its events are served from its record too.
    let evs = events(&server, &id, None).await;
    assert_eq!(evs.last().unwrap().1["event"], "job_finished");
}

#[tokio::test]
async fn stopping_the_server_cancels_its_jobs_and_exits_0() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "serve");
    std::fs::write(dir.path().join("long.yaml"), LONG).unwrap();
    let mut server = Server::start(dir.path(), &[]);
    let r = server
        .post("/v1/runs", &json!({ "manifest": "long.yaml" }))
        .await;
    assert_eq!(r.status(), 202);
    let deadline = Instant::now() + Duration::from_mins(1);
    while dir.containers().await.is_empty() {
        assert!(Instant::now() < deadline, "no sandbox was created");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(server.stop(), Some(0));
    let rec = crate::common::instance_toml(&dir.path().join(".pocketdock/instances/long-0001"));
    assert_eq!(rec["status"].as_str(), Some("cancelled"));
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn a_sandbox_of_the_project_runs_commands_and_python_over_http() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "serve");
    let name = crate::common::unique("serve");
    let o = Pd::at(dir.path()).output(&["create", "--name", &name]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let server = Server::start(dir.path(), &[]);

    let list = server.get_json("/v1/sandboxes").await;
    assert!(list["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == name.as_str()));
    let info = server.get_json(&format!("/v1/sandboxes/{name}")).await;
    assert_eq!(info["name"], name.as_str(), "{info}");

    let r = server
        .post(
            &format!("/v1/sandboxes/{name}/exec"),
            &json!({ "command": "echo out; echo err >&2; exit 3" }),
        )
        .await;
    assert_eq!(r.status(), 200);
    let res: Value = r.json().await.unwrap();
    assert_eq!(res["exit_code"], 3);
    assert_eq!(res["stdout"], "out\n");
    assert_eq!(res["stderr"], "err\n");

    // Kernel state survives between calls.
    let py = |code: &str| json!({ "code": code });
    let r = server
        .post(&format!("/v1/sandboxes/{name}/python"), &py("x = 21"))
        .await;
    assert_eq!(r.status(), 200);
    let r = server
        .post(&format!("/v1/sandboxes/{name}/python"), &py("x * 2"))
        .await;
    let res: Value = r.json().await.unwrap();
    assert_eq!(res["result"], "42", "{res}");
    let vars = server.get_json(&format!("/v1/sandboxes/{name}/vars")).await;
    assert!(
        vars["vars"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "x" && v["type"] == "int"),
        "{vars}"
    );

    // Only this project's sandboxes.
    let r = server.get("/v1/sandboxes/not-a-sandbox-of-ours").await;
    assert_eq!(r.status(), 404);
}

// `/v1/jobs` is the API's word for a job; `/v1/runs`, its first name, stays
// an alias: both list, read, stream and serve the logs of the same job.
#[tokio::test]
async fn jobs_and_their_runs_alias_list_and_fetch_the_same_job() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "serve");
    std::fs::write(
        dir.path().join("one.yaml"),
        "version: 1\nname: one\nsandboxes:\n  a: {}\nsteps:\n  hi:\n    sandbox: a\n    run: echo hello from a\n",
    )
    .unwrap();
    let server = Server::start(dir.path(), &[]);
    let r = server
        .post("/v1/jobs", &json!({ "manifest": "one.yaml" }))
        .await;
    assert_eq!(r.status(), 202);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The stream ends with the job.
    let streamed = server.get(&format!("/v1/jobs/{id}/events")).await;
    assert_eq!(streamed.status(), 200);
    let body = tokio::time::timeout(Duration::from_mins(2), streamed.text())
        .await
        .expect("the event stream never ended")
        .unwrap();
    assert!(body.contains("job_finished"), "{body}");
    assert_eq!(events(&server, &id, None).await, sse_events(&body));

    let jobs = server.get_json("/v1/jobs").await;
    let runs = server.get_json("/v1/runs").await;
    assert_eq!(jobs["runs"][0]["id"], id.as_str());
    assert_eq!(jobs, runs);
    let job = server.get_json(&format!("/v1/jobs/{id}")).await;
    assert_eq!(job["status"], "succeeded");
    assert_eq!(job, server.get_json(&format!("/v1/runs/{id}")).await);
    for base in ["/v1/jobs", "/v1/runs"] {
        let log = server.get(&format!("{base}/{id}/steps/hi@a/log")).await;
        assert_eq!(log.status(), 200, "{base}");
        assert!(log.text().await.unwrap().contains("hello from a"));
    }
}
