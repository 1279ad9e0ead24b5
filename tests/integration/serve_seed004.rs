//! Seed 004's API on `pocketdock serve`: a job's output lines as paged
//! messages, its events as a JSON list, and a start that waits for the end.

use std::time::{Duration, Instant};

use pocketdock::Engine;
use serde_json::{json, Value};

use crate::common::TestProject;
use crate::serve::{events, until_ended, Server};

const TWO: &str = "version: 1
name: two
sandboxes:
  a: {}
  b: {}
steps:
  one:
    sandbox: a
    run: for i in 1 2 3 4 5; do echo a$i; done; echo oops >&2
  two:
    sandbox: b
    run: echo b1; echo b2; echo b3
";

const SLEEPY: &str = "version: 1
name: sleepy
sandboxes:
  box: {}
steps:
  nap:
    run: sleep 6; echo woke
";

/// A project holding the manifest `name`, and a server in it.
fn serving(engine: &Engine, name: &str, manifest: &str) -> (TestProject, Server) {
    let dir = TestProject::new(engine, "serve");
    std::fs::write(dir.path().join(name), manifest).unwrap();
    let server = Server::start(dir.path(), &[]);
    (dir, server)
}

async fn bad(server: &Server, path: &str, says: &str) {
    let r = server.get(path).await;
    assert_eq!(r.status(), 400, "{path}");
    let body: Value = r.json().await.unwrap();
    let error = body["error"].as_str().unwrap();
    assert!(error.contains(says), "{path}: {body}");
    assert!(!body["hint"].as_str().unwrap().is_empty(), "{body}");
}

#[tokio::test]
async fn a_waited_job_answers_at_its_end_and_pages_its_messages_and_events() {
    let engine = engine_or_skip!();
    let (dir, server) = serving(&engine, "two.yaml", TWO);

    // `wait`: the answer is the ended job's record.
    let r = server
        .post("/v1/jobs", &json!({ "manifest": "two.yaml", "wait": true }))
        .await;
    assert_eq!(r.status(), 200);
    let rec: Value = r.json().await.unwrap();
    assert_eq!(rec["status"], "succeeded", "{rec}");
    assert_eq!(rec["steps"].as_array().unwrap().len(), 2);
    let id = rec["id"].as_str().unwrap().to_string();

    messages_page_with_after_and_limit(&server, &id).await;
    events_list_with_since(&server, &id).await;
    dir.assert_no_leaks().await;
}

/// The job `id` of `TWO`'s messages, whole and paged, and the 400s.
async fn messages_page_with_after_and_limit(server: &Server, id: &str) {
    // Messages: every output line, with its step, stream and time.
    let all = server.get_json(&format!("/v1/jobs/{id}/messages")).await;
    assert_eq!(all["more"], false, "{all}");
    assert_eq!(all["status"], "succeeded");
    let list = all["messages"].as_array().unwrap();
    let of = |step: &str| -> Vec<(String, String)> {
        list.iter()
            .filter(|m| m["step"] == step)
            .map(|m| {
                (
                    m["stream"].as_str().unwrap().into(),
                    m["text"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    let out = |t: &str| ("stdout".to_string(), t.to_string());
    let mut one = vec![out("a1"), out("a2"), out("a3"), out("a4"), out("a5")];
    one.push(("stderr".into(), "oops".into()));
    assert_eq!(of("one@a"), one, "{all}");
    assert_eq!(of("two@b"), [out("b1"), out("b2"), out("b3")]);
    assert_eq!(list.len(), 9);
    let stamps: Vec<&str> = list.iter().map(|m| m["ts"].as_str().unwrap()).collect();
    assert!(stamps.iter().all(|t| t.starts_with("20")), "{stamps:?}");
    // Merged by time.
    let parsed: Vec<time::OffsetDateTime> = stamps
        .iter()
        .map(|t| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).unwrap()
        })
        .collect();
    assert!(parsed.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");

    // Paged two at a time with `after`: the same lines, none twice.
    let mut paged = Vec::new();
    let mut after = String::new();
    loop {
        let page = server
            .get_json(&format!("/v1/runs/{id}/messages?limit=2&after={after}"))
            .await;
        let got = page["messages"].as_array().unwrap();
        assert!(got.len() <= 2, "{page}");
        paged.extend(got.iter().cloned());
        after = page["next_after"].as_str().unwrap().to_string();
        if page["more"] == false {
            break;
        }
        assert!(paged.len() < 20, "paging never ends");
    }
    assert_eq!(&paged, list);
    // At the end: nothing more, the same position.
    let end = server
        .get_json(&format!("/v1/jobs/{id}/messages?after={after}"))
        .await;
    assert_eq!(end["messages"], json!([]));
    assert_eq!(end["next_after"], after.as_str());
    bad(
        server,
        &format!("/v1/jobs/{id}/messages?limit=0"),
        "from 1 to 1000",
    )
    .await;
    bad(
        server,
        &format!("/v1/jobs/{id}/messages?limit=1001"),
        "from 1 to 1000",
    )
    .await;
    bad(
        server,
        &format!("/v1/jobs/{id}/messages?limit=many"),
        "limit",
    )
    .await;
    bad(
        server,
        &format!("/v1/jobs/{id}/messages?after=7"),
        "not a position",
    )
    .await;
    bad(
        server,
        &format!("/v1/jobs/{id}/messages?after=x.y"),
        "not a position",
    )
    .await;
    assert_eq!(
        server.get("/v1/jobs/nope-0001/messages").await.status(),
        404
    );
}

/// The job `id`'s events as a JSON list: the stream's, paged with `since`.
async fn events_list_with_since(server: &Server, id: &str) {
    // Events as a JSON list: the stream's events, ids and all.
    let streamed = events(server, id, None).await;
    let listed = server
        .get_json(&format!("/v1/jobs/{id}/events?format=json"))
        .await;
    assert_eq!(listed["more"], false);
    let as_pairs = |v: &Value| -> Vec<(u64, Value)> {
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["id"].as_u64().unwrap(), e["data"].clone()))
            .collect()
    };
    assert_eq!(as_pairs(&listed), streamed);
    let last_id = streamed.last().unwrap().0;
    assert_eq!(listed["next_since"], last_id);
    // By `Accept`, too; `since` lists what came after.
    let accepted: Value = server
        .client
        .get(server.url(&format!("/v1/runs/{id}/events?since=3")))
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(as_pairs(&accepted), streamed[3..].to_vec());
    let page = server
        .get_json(&format!("/v1/jobs/{id}/events?format=json&since=1&limit=2"))
        .await;
    assert_eq!(as_pairs(&page), streamed[1..3].to_vec());
    assert_eq!(
        (page["next_since"].as_u64(), page["more"].as_bool()),
        (Some(3), Some(true))
    );
    let none = server
        .get_json(&format!("/v1/jobs/{id}/events?format=json&since={last_id}"))
        .await;
    assert_eq!(none["events"], json!([]));
    bad(
        server,
        &format!("/v1/jobs/{id}/events?format=json&since=-1"),
        "not an event id",
    )
    .await;
    bad(
        server,
        &format!("/v1/jobs/{id}/events?format=json&limit=10001"),
        "from 1 to 10000",
    )
    .await;
    bad(
        server,
        &format!("/v1/jobs/{id}/events?format=xml"),
        "format",
    )
    .await;
    let missing = server.get("/v1/jobs/nope-0001/events?format=json").await;
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn a_wait_that_times_out_is_202_and_neither_it_nor_a_client_leaving_stops_the_job() {
    let engine = engine_or_skip!();
    let (dir, server) = serving(&engine, "sleepy.yaml", SLEEPY);
    for (timeout, says) in [
        (json!(0), "from 1 to 3600"),
        (json!(3601), "from 1 to 3600"),
        (json!("5"), "from 1 to 3600"),
    ] {
        let r = server
            .post(
                "/v1/jobs",
                &json!({ "manifest": "sleepy.yaml", "wait": true, "timeout": timeout }),
            )
            .await;
        assert_eq!(r.status(), 400, "{timeout}");
        let body: Value = r.json().await.unwrap();
        assert!(body["error"].as_str().unwrap().contains(says), "{body}");
    }
    let r = server
        .post(
            "/v1/jobs",
            &json!({ "manifest": "sleepy.yaml", "timeout": 5 }),
        )
        .await;
    assert_eq!(r.status(), 400);
    // Nothing ran.
    assert_eq!(server.get_json("/v1/jobs").await["runs"], json!([]));

    let began = Instant::now();
    let r = server
        .post(
            "/v1/jobs",
            &json!({ "manifest": "sleepy.yaml", "wait": true, "timeout": 1 }),
        )
        .await;
    assert_eq!(r.status(), 202);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    let rec: Value = r.json().await.unwrap();
    assert_eq!(rec["status"], "running", "{rec}");
    let timed_out = rec["id"].as_str().unwrap().to_string();

    // A client that leaves while it waits leaves the job running to its end.
    let waiting = server.client.post(server.url("/v1/jobs"));
    let waiting = tokio::spawn(
        waiting
            .json(&json!({ "manifest": "sleepy.yaml", "wait": true }))
            .send(),
    );
    let deadline = Instant::now() + Duration::from_mins(1);
    let list = loop {
        let list = server.get_json("/v1/jobs").await;
        if list["runs"].as_array().unwrap().len() == 2 {
            break list;
        }
        assert!(Instant::now() < deadline, "the waited job never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        !waiting.is_finished(),
        "the wait answered before the job ended"
    );
    waiting.abort();
    let ids: Vec<&str> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for id in ids {
        let rec = until_ended(&server, id, Duration::from_mins(2)).await;
        assert_eq!(rec["status"], "succeeded", "{id}: {rec}");
        assert_eq!(rec["steps"][0]["status"], "succeeded", "{rec}");
    }
    let out = server
        .get_json(&format!("/v1/jobs/{timed_out}/messages"))
        .await;
    assert_eq!(out["messages"][0]["text"], "woke", "{out}");
    dir.assert_no_leaks().await;
}
