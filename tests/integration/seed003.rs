//! Seed 003 (a persistent Python kernel sandbox) to the letter, one test per
//! acceptance criterion, through `pocketdock serve --sandbox NAME` and its
//! top-level paths (`POST /exec`, `GET /vars`, `GET /var/{name}`), the
//! shapes a client written for the seed sends and reads. The same shapes
//! under `/v1/sandboxes/{name}/...` are checked alongside.
//!
//! AC-6 (DNS blocked, raw IPs still reachable) is `--network dns-blocked`,
//! the seed's `--dns 0.0.0.0`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{unique, TestProject};
use crate::serve::Server;

/// A project with a sandbox made by `create` with `extra` arguments, and a
/// server bound to it.
fn bound(engine: &pocketdock::Engine, extra: &[&str]) -> (TestProject, String, Server) {
    let dir = TestProject::new(engine, "seed003");
    let name = unique("seed003");
    let mut args = vec!["create", "--name", name.as_str()];
    args.extend_from_slice(extra);
    let o = dir.pd().output(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let server = Server::start(dir.path(), &["--sandbox", &name]);
    (dir, name, server)
}

/// Stop the server, remove the sandbox, and check nothing is left.
async fn finish(dir: TestProject, name: &str, server: Server) {
    drop(server);
    let o = dir.pd().output(&["shutdown", name, "-y"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir.assert_no_leaks().await;
}

async fn exec(server: &Server, body: &Value) -> Value {
    let r = server.post("/exec", body).await;
    assert_eq!(r.status(), 200, "POST /exec {body}");
    r.json().await.unwrap()
}

// AC-1: the service starts and its health check passes within 10 s, the
// kernel already reached; a sandbox that is not the project's is refused.
#[tokio::test]
async fn ac1_the_bound_server_is_healthy_within_10s() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "seed003");
    let name = unique("seed003");
    let o = dir.pd().output(&["create", "--name", &name]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let started = Instant::now();
    let server = Server::start(dir.path(), &["--sandbox", &name]);
    let health = server.get("/healthz").await;
    assert_eq!(health.status(), 200);
    assert_eq!(server.get_json("/vars").await, json!([]));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "healthy after {:?}",
        started.elapsed()
    );
    finish(dir, &name, server).await;

    let dir = TestProject::new(&engine, "seed003");
    dir.pd()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--sandbox",
            "pdt-not-ours",
        ])
        .code(2)
        .stderr_has("pdt-not-ours");

    // Without --sandbox, the seed's paths say how to get them.
    let server = Server::start(dir.path(), &[]);
    let r = server.post("/exec", &json!({ "code": "1" })).await;
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["hint"].as_str().unwrap().contains("--sandbox"),
        "{body}"
    );
}

// AC-2: POST /exec {code: "x = 42"} returns {output: "", stderr: "", vars: ["x"]}.
#[tokio::test]
async fn ac2_exec_returns_output_stderr_and_the_names_bound() {
    let engine = engine_or_skip!();
    let (dir, name, server) = bound(&engine, &[]);
    let r = exec(&server, &json!({ "code": "x = 42" })).await;
    assert_eq!(r, json!({ "output": "", "stderr": "", "vars": ["x"] }));

    let r = exec(
        &server,
        &json!({ "code": "print('hi')\nprint('oops', file=__import__('sys').stderr)\ny = 1" }),
    )
    .await;
    assert_eq!(
        r,
        json!({ "output": "hi\n", "stderr": "oops\n", "vars": ["y"] })
    );
    // A traceback is the code's failure: 200, with `error`.
    let r = exec(&server, &json!({ "code": "1 / 0" })).await;
    assert!(
        r["error"].as_str().unwrap().contains("ZeroDivisionError"),
        "{r}"
    );

    // The same shape under the server's sandbox routes; `command` keeps its own.
    let path = format!("/v1/sandboxes/{name}/exec");
    let r = server.post(&path, &json!({ "code": "z = 7" })).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body, json!({ "output": "", "stderr": "", "vars": ["z"] }));
    let r = server.post(&path, &json!({ "command": "echo out" })).await;
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        (body["exit_code"].clone(), body["stdout"].clone()),
        (json!(0), json!("out\n"))
    );
    let r = server
        .post(&path, &json!({ "code": "1", "command": "true" }))
        .await;
    assert_eq!(r.status(), 400);
    let r = server
        .post("/exec", &json!({ "code": "1", "nope": 1 }))
        .await;
    assert_eq!(r.status(), 422);
    finish(dir, &name, server).await;
}

// AC-3: GET /vars returns [{name: "x", type: "int", summary: "42"}].
#[tokio::test]
async fn ac3_vars_is_a_list_of_name_type_and_summary() {
    let engine = engine_or_skip!();
    let (dir, name, server) = bound(&engine, &[]);
    exec(&server, &json!({ "code": "x = 42" })).await;
    assert_eq!(
        server.get_json("/vars").await,
        json!([{ "name": "x", "type": "int", "summary": "42" }])
    );
    // `/v1/sandboxes/{name}/vars` keeps its answer: the same list, under `vars`.
    assert_eq!(
        server.get_json(&format!("/v1/sandboxes/{name}/vars")).await,
        json!({ "vars": [{ "name": "x", "type": "int", "summary": "42" }] })
    );
    finish(dir, &name, server).await;
}

// AC-4: GET /var/x returns {value: 42}.
#[tokio::test]
async fn ac4_var_returns_the_value() {
    let engine = engine_or_skip!();
    let (dir, name, server) = bound(&engine, &[]);
    exec(
        &server,
        &json!({ "code": "x = 42\nd = {'k': [1, 'a']}\nclass C: pass\nc = C()" }),
    )
    .await;
    assert_eq!(server.get_json("/var/x").await, json!({ "value": 42 }));
    assert_eq!(
        server.get_json("/var/d").await,
        json!({ "value": { "k": [1, "a"] } })
    );
    // Not JSON: its repr.
    let c = server.get_json("/var/c").await;
    assert!(
        c["value"]
            .as_str()
            .unwrap()
            .starts_with("<__main__.C object"),
        "{c}"
    );
    assert_eq!(
        server
            .get_json(&format!("/v1/sandboxes/{name}/var/x"))
            .await,
        json!({ "value": 42 })
    );
    let r = server.get("/var/nope").await;
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("nope"), "{body}");
    finish(dir, &name, server).await;
}

// AC-5: state persists across /exec calls (set x = 1, then read x).
#[tokio::test]
async fn ac5_state_persists_across_exec_calls() {
    let engine = engine_or_skip!();
    let (dir, name, server) = bound(&engine, &[]);
    let r = exec(&server, &json!({ "code": "x = 1" })).await;
    assert_eq!(r["vars"], json!(["x"]));
    // The last expression shows in `output`, as a REPL shows it.
    let r = exec(&server, &json!({ "code": "x" })).await;
    assert_eq!(r, json!({ "output": "1\n", "stderr": "", "vars": [] }));
    let r = exec(&server, &json!({ "code": "print(x + 1)" })).await;
    assert_eq!(r["output"], "2\n");
    assert_eq!(server.get_json("/var/x").await, json!({ "value": 1 }));
    // A server restarted on the same sandbox reaches the same kernel.
    drop(server);
    let server = Server::start(dir.path(), &["--sandbox", &name]);
    assert_eq!(server.get_json("/var/x").await, json!({ "value": 1 }));
    finish(dir, &name, server).await;
}

// AC-6: DNS resolution fails inside the sandbox, at once; a raw IP on the
// bridge (another sandbox serving HTTP) still answers.
#[tokio::test]
async fn ac6_dns_fails_fast_and_a_raw_ip_on_the_bridge_still_answers() {
    let engine = engine_or_skip!();
    let (dir, name, server) = bound(&engine, &["--network", "dns-blocked"]);
    let peer = unique("seed003-peer");
    let o = dir.pd().output(&["create", "--name", &peer, "--network"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let serve = "python3 -m http.server 8000 --bind 0.0.0.0";
    let o = dir.pd().output(&["run", &peer, "--detach", serve]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let info = dir.pd().cmd(["info", &peer, "--json"]).code(0).json();
    let ip = info["ip_address"].as_str().expect("the peer has an IP");
    let info = dir.pd().cmd(["info", &name, "--json"]).code(0).json();
    assert_eq!(
        (&info["network"], &info["dns_blocked"]),
        (&json!(true), &json!(true))
    );
    dir.pd()
        .args(["info", &name])
        .code(0)
        .stdout_has("enabled, DNS blocked");

    // The seed's check was curl to a domain; here, the lookup that any
    // client makes first. It must fail, and fail fast: no resolver timeout.
    let r = exec(
        &server,
        &json!({ "code": "import socket, time\nt = time.monotonic()\ntry:\n    socket.getaddrinfo('example.com', 80)\n    looked = 'resolved'\nexcept socket.gaierror as e:\n    looked = 'failed'\nprint(looked, time.monotonic() - t < 1.5)\nprint(open('/etc/resolv.conf').read())" }),
    )
    .await;
    let out = r["output"].as_str().unwrap();
    assert!(out.starts_with("failed True\n"), "{r}");
    assert!(out.contains("nameserver 0.0.0.0"), "{r}");
    assert!(!out.contains("search "), "{r}");

    // The peer's bridge IP answers (the server may take a moment to bind).
    let code = format!(
        "import time, urllib.request\nfor _ in range(50):\n    try:\n        s = urllib.request.urlopen('http://{ip}:8000/', timeout=2).status\n        break\n    except OSError as e:\n        s = repr(e)\n        time.sleep(0.2)\nprint(s)"
    );
    let r = exec(&server, &json!({ "code": code })).await;
    assert_eq!(r["output"], "200\n", "{r}");

    let o = dir.pd().output(&["shutdown", &peer, "-y"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    finish(dir, &name, server).await;
}

// AC-7: an allocation past the sandbox's memory limit fails gracefully: a
// clear error in the answer, the server up, and the next call served.
#[tokio::test]
async fn ac7_an_allocation_past_the_memory_limit_fails_gracefully() {
    let engine = engine_or_skip!();
    let (dir, name, server) = bound(&engine, &["--mem", "128m"]);
    let r = exec(&server, &json!({ "code": "b = bytearray(600 << 20)" })).await;
    let error = r["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error: {r}"));
    // Python may raise MemoryError first; else the kernel is killed and says why.
    assert!(
        error.contains("MemoryError") || error.contains("memory limit"),
        "{r}"
    );
    if error.contains("memory limit") {
        assert!(
            error.ends_with("the next call starts a fresh kernel"),
            "{r}"
        );
    }
    assert_eq!(server.get("/healthz").await.status(), 200);
    let r = exec(&server, &json!({ "code": "y = 2\ny * 21" })).await;
    assert_eq!(r["output"], "42\n", "{r}");
    assert_eq!(server.get_json("/var/y").await, json!({ "value": 2 }));
    finish(dir, &name, server).await;
}

// AC-8: /exec with timeout=5 stops the code after 5 s and returns an error.
#[tokio::test]
async fn ac8_exec_with_a_timeout_stops_the_code_and_returns_an_error() {
    let engine = engine_or_skip!();
    let (dir, name, server) = bound(&engine, &[]);
    exec(&server, &json!({ "code": "x = 1" })).await;
    let started = Instant::now();
    let r = exec(
        &server,
        &json!({ "code": "import time\nprint('before')\ntime.sleep(60)", "timeout": 5 }),
    )
    .await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(
        r["error"].as_str().unwrap().starts_with("TimeoutError"),
        "{r}"
    );
    assert_eq!(r["timed_out"], true);
    assert_eq!(r["output"], "before\n");
    // The kernel and its state are kept.
    assert_eq!(server.get_json("/var/x").await, json!({ "value": 1 }));
    let r = server
        .post("/exec", &json!({ "code": "1", "timeout": 0 }))
        .await;
    assert_eq!(r.status(), 400);
    finish(dir, &name, server).await;
}
