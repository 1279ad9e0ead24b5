//! What `pocketdock bench exec` prints: where it measured, its table, and
//! the lines that hold the figures against their targets.

use super::{Args, Series};
use crate::backend::{Backend, BackendInfo, Capability};
use crate::engine::Engine;

/// What was left out on Kubernetes, and why: one line each.
const SKIPPED_CREATES: &str = "create with and without the helper: skipped on Kubernetes \
     (every pod of a run gets the helper's relay; compare a run under POCKETDOCK_EXEC_VIA=exec)";
/// The name of the floor series: what the backend needs for one exec.
pub(super) fn floor_name(backend: &Backend) -> &'static str {
    if backend.as_engine().is_some() {
        "engine floor (create+start+inspect)"
    } else {
        "backend floor (pod exec of true)"
    }
}

/// Whether the helper is reached through a relay over one exec (a pod, a
/// remote engine) rather than a socket shared with the host.
pub(super) fn relayed(backend: &Backend) -> bool {
    !backend.capabilities().has(Capability::HelperMount)
}

pub(super) fn engine_header(engine: &Engine) -> String {
    let info = engine.info();
    format!(
        "engine: {:?} {} (API {}) at {}",
        info.kind,
        info.version,
        info.api_version,
        info.socket.display()
    )
}

fn backend_header(info: &BackendInfo) -> String {
    format!(
        "backend: {} at {} (namespace {})",
        info.kind,
        info.endpoint,
        info.namespace.as_deref().unwrap_or("-")
    )
}

pub(super) fn table(all: &[Series]) {
    println!(
        "{:<34} {:>5} {:>9} {:>9} {:>9}",
        "series", "runs", "p50 ms", "p90 ms", "mean ms"
    );
    for s in all {
        println!(
            "{:<34} {:>5} {:>9.2} {:>9.2} {:>9.2}",
            s.name, s.runs, s.p50_ms, s.p90_ms, s.mean_ms
        );
    }
}

/// `run("true")` held against its target: 2 ms through a helper on a
/// shared socket; through a relay or the engine's exec, against the floor.
pub(super) fn summary(all: &[Series], relay: bool) -> Vec<String> {
    let p50 = |prefix: &str| {
        all.iter()
            .find(|s| s.name.starts_with(prefix))
            .map(|s| s.p50_ms)
    };
    let floor = all
        .iter()
        .find(|s| s.name.contains(" floor "))
        .map(|s| s.p50_ms);
    let helper = p50("pocketdock library run(\"true\") via helper");
    let mut out = Vec::new();
    match (helper, floor) {
        (Some(lib), Some(floor)) if relay => {
            out.push(format!(
                "library run(\"true\") through the helper's relay: p50 {lib:.2} ms, \
                 {:.2}x the floor",
                lib / floor
            ));
            if let Some(exec) = p50("pocketdock library run(\"true\"), exec forced") {
                out.push(format!(
                    "library run(\"true\") through the exec: p50 {exec:.2} ms, {:.2}x the floor",
                    exec / floor
                ));
            }
        }
        (Some(lib), _) => out.push(format!(
            "library run(\"true\") through the helper: p50 {lib:.2} ms (target <= 2 ms)"
        )),
        (None, Some(floor)) => {
            if let Some(lib) = p50("pocketdock library run(\"true\") via") {
                // A remote engine, or exec forced: the helper's target does not apply.
                out.push(format!(
                    "library run(\"true\") through the engine's exec: p50 {lib:.2} ms, \
                     {:.2}x the engine's floor",
                    lib / floor
                ));
            }
        }
        (None, None) => {}
    }
    out
}

pub(super) fn helper_memory(rss: Option<u64>) -> String {
    match rss {
        Some(kib) => format!(
            "helper resident memory: {:.2} MB (target <= 2 MB)",
            kib as f64 / 1024.0
        ),
        None => "helper: none answered (POCKETDOCK_EXEC_VIA=exec, or it cannot run here)".into(),
    }
}

/// Where a benchmark measured, as JSON: the engine's info, or the
/// cluster's kind, server and namespace.
pub(super) fn backend_json(backend: &Backend) -> serde_json::Value {
    if let Some(engine) = backend.as_engine() {
        return serde_json::json!(engine.info());
    }
    let info = backend.info();
    serde_json::json!({
        "kind": info.kind, "endpoint": info.endpoint, "namespace": info.namespace,
    })
}

/// The whole report of a run on Kubernetes.
pub(super) fn kubernetes(backend: &Backend, all: &[Series], rss: Option<u64>, a: &Args) {
    let info = backend.info();
    if a.json {
        let backend = backend_json(backend);
        println!(
            "{}",
            serde_json::json!({
                "backend": backend, "series": all, "helper_rss_kib": rss, "skipped": [SKIPPED_CREATES],
            })
        );
        return;
    }
    println!("{}", backend_header(&info));
    table(all);
    for line in summary(all, relayed(backend)) {
        println!("{line}");
    }
    println!("{}", helper_memory(rss));
    println!("{SKIPPED_CREATES}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, p50_ms: f64) -> Series {
        Series {
            name: name.into(),
            runs: 3,
            p50_ms,
            p90_ms: p50_ms,
            mean_ms: p50_ms,
        }
    }

    fn measured(via: &str) -> Vec<Series> {
        vec![
            s("backend floor (pod exec of true)", 20.0),
            s(&format!("pocketdock library run(\"true\") via {via}"), 5.0),
            s("pocketdock library run(\"true\"), exec forced", 22.0),
        ]
    }

    #[test]
    fn a_relayed_helper_is_held_against_the_floor_not_the_socket_target() {
        let lines = summary(&measured("helper"), true);
        assert_eq!(
            lines,
            [
                "library run(\"true\") through the helper's relay: p50 5.00 ms, 0.25x the floor",
                "library run(\"true\") through the exec: p50 22.00 ms, 1.10x the floor",
            ]
        );
    }

    #[test]
    fn a_helper_on_a_shared_socket_keeps_its_target() {
        let lines = summary(&measured("helper"), false);
        assert_eq!(
            lines,
            ["library run(\"true\") through the helper: p50 5.00 ms (target <= 2 ms)"]
        );
    }

    #[test]
    fn without_a_helper_the_exec_is_held_against_the_floor() {
        let mut all = measured("exec (no helper)");
        all[0] = s("engine floor (create+start+inspect)", 10.0);
        let lines = summary(&all, true);
        assert_eq!(
            lines,
            ["library run(\"true\") through the engine's exec: p50 5.00 ms, 0.50x the engine's floor"]
        );
    }

    #[test]
    fn the_backend_is_named_with_its_server_and_namespace() {
        let info = BackendInfo {
            kind: "kubernetes".into(),
            version: String::new(),
            endpoint: "https://127.0.0.1:6443/".into(),
            namespace: Some("ci".into()),
        };
        assert_eq!(
            backend_header(&info),
            "backend: kubernetes at https://127.0.0.1:6443/ (namespace ci)"
        );
    }
}
