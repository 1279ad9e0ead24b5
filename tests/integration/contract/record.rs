//! A job record with what must differ between backends taken out: times,
//! container names, the engine, measured usage. What is left (statuses,
//! exit codes, errors, output by stream, artifacts) is what the contract
//! holds every backend to.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

/// Keys of `instance.toml` that differ by backend or by run.
const VARYING: &[&str] = &[
    "started",
    "finished",
    "duration_ms",
    "runner_pid",
    "manifest",
    "manifest_sha256",
    "engine",
    "container",
    "usage",
];

/// The record under `record` (an instance directory), normalized.
pub fn normalized(record: &Path) -> Value {
    let toml = crate::common::instance_toml(record);
    let mut doc = serde_json::to_value(toml).expect("the record as JSON");
    strip(&mut doc);
    let steps = doc["steps"].as_array_mut().expect("the record's steps");
    steps.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    for step in steps.iter_mut() {
        if let Some(log) = step.get("log").and_then(Value::as_str) {
            let text = std::fs::read_to_string(record.join("logs").join(log))
                .unwrap_or_else(|e| panic!("{log}: {e}"));
            step["log"] = streams(&text);
        }
    }
    if let Some(sandboxes) = doc["sandboxes"].as_array_mut() {
        sandboxes.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    }
    doc["artifacts"] = json!(artifacts(&record.join("artifacts")));
    doc
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !VARYING.contains(&k.as_str()));
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// A step log's output lines by stream, without their times (the order
/// between stdout and stderr is not kept by every exec path), and its
/// closing lines. Each attempt is a block of its own.
fn streams(text: &str) -> Value {
    let mut attempts = Vec::new();
    let mut current: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix('[') {
            // `[stdout 19:52:29.603] text`
            if let Some((tag, body)) = rest.split_once("] ") {
                let stream = tag.split_whitespace().next().unwrap_or(tag);
                current.entry(stream.into()).or_default().push(body.into());
                continue;
            }
        }
        for key in ["status: ", "exit_code: ", "reason: "] {
            if let Some(value) = line.strip_prefix(key) {
                current
                    .entry(key.trim_end_matches(": ").into())
                    .or_default()
                    .push(value.into());
            }
        }
        if line.starts_with("attempt: ") && !current.is_empty() {
            attempts.push(std::mem::take(&mut current));
        }
    }
    attempts.push(current);
    json!(attempts)
}

/// Every file under `dir`, by its path relative to `dir`, with its text.
fn artifacts(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    out
}
