//! Pods: create (a container, started), get and list (status from the
//! container's inspect), delete (the container removed).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::{Path, Query, State as Extract};
use axum::response::{IntoResponse, Response};
use axum::Json;
use pocketdock::engine::CreateContainer;
use serde_json::{json, Value};

use super::{lock, status, watch, PodEntry, State, LABEL};

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| {
        a.iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    })
}

/// A memory quantity (`67108864`, `64Mi`) in bytes.
fn bytes(q: &str) -> Option<i64> {
    let (n, mult) = match q {
        _ if q.ends_with("Ki") => (&q[..q.len() - 2], 1 << 10),
        _ if q.ends_with("Mi") => (&q[..q.len() - 2], 1 << 20),
        _ if q.ends_with("Gi") => (&q[..q.len() - 2], 1 << 30),
        _ => (q, 1),
    };
    n.parse::<i64>().ok().map(|n| n * mult)
}

/// A CPU quantity (`500m`, `2`) in 1e-9 CPUs.
fn nanos(q: &str) -> Option<i64> {
    match q.strip_suffix('m') {
        Some(m) => m.parse::<i64>().ok().map(|m| m * 1_000_000),
        None => q.parse::<f64>().ok().map(|c| (c * 1e9) as i64),
    }
}

/// The container create for a pod's first container.
fn container_body(state: &State, pod: &Value) -> Result<CreateContainer, String> {
    let c = &pod["spec"]["containers"][0];
    let image = c["image"]
        .as_str()
        .ok_or("spec.containers[0].image: Required value")?;
    let mut labels: BTreeMap<String, String> =
        serde_json::from_value(pod["metadata"]["labels"].clone()).unwrap_or_default();
    labels.insert(LABEL.into(), state.id.clone());
    labels.insert("pocketdock.test".into(), "true".into());
    let mut body = CreateContainer {
        image: image.to_string(),
        labels,
        env: c["env"]
            .as_array()
            .map(|env| {
                env.iter()
                    .map(|e| {
                        format!(
                            "{}={}",
                            e["name"].as_str().unwrap_or(""),
                            e["value"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        working_dir: c["workingDir"].as_str().map(str::to_string),
        open_stdin: c["stdin"].as_bool().unwrap_or(false),
        entrypoint: strings(&c["command"]),
        cmd: strings(&c["args"]),
        ..CreateContainer::default()
    };
    let limits = &c["resources"]["limits"];
    body.host_config.memory = limits["memory"].as_str().and_then(bytes);
    body.host_config.memory_swap = body.host_config.memory;
    body.host_config.nano_cpus = limits["cpu"].as_str().and_then(nanos);
    // Memory-backed emptyDirs as tmpfs.
    let volumes: HashMap<String, &Value> = pod["spec"]["volumes"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|v| (v["name"].as_str().unwrap_or("").to_string(), v))
                .collect()
        })
        .unwrap_or_default();
    for m in c["volumeMounts"].as_array().into_iter().flatten() {
        let Some(v) = m["name"].as_str().and_then(|n| volumes.get(n)) else {
            return Err("spec.containers[0].volumeMounts: volume not found".into());
        };
        if v["emptyDir"]["medium"] == "Memory" {
            let path = m["mountPath"].as_str().unwrap_or("/").to_string();
            // Like the kubelet's tmpfs, not the engines' default: programs
            // run from it (the helper does).
            body.host_config.tmpfs.insert(path, "mode=1777,exec".into());
        }
    }
    let security = &c["securityContext"];
    body.host_config.readonly_rootfs = security["readOnlyRootFilesystem"] == true;
    body.host_config.cap_drop = strings(&security["capabilities"]["drop"]).unwrap_or_default();
    body.host_config.cap_add = strings(&security["capabilities"]["add"]).unwrap_or_default();
    if security["allowPrivilegeEscalation"] == false {
        body.host_config.security_opt = vec!["no-new-privileges".into()];
    }
    Ok(body)
}

fn with_meta(mut pod: Value, ns: &str) -> Value {
    let meta = &mut pod["metadata"];
    meta["namespace"] = json!(ns);
    meta["uid"] = json!(format!(
        "{:08x}-0000-4000-8000-{:012x}",
        fastrand::u32(..),
        fastrand::u64(..) >> 16
    ));
    meta["creationTimestamp"] = json!(time_now());
    pod["kind"] = json!("Pod");
    pod["apiVersion"] = json!("v1");
    pod
}

pub fn time_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since the epoch to a civil date (Howard Hinnant's algorithm).
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `POST /api/v1/namespaces/{ns}/pods`.
pub async fn create(
    Extract(state): Extract<Arc<State>>,
    Path(ns): Path<String>,
    Json(pod): Json<Value>,
) -> Response {
    if state.fail_create.swap(false, Ordering::SeqCst) {
        return status(500, "InternalError", "injected fault: create failed");
    }
    let Some(name) = pod["metadata"]["name"].as_str().map(str::to_string) else {
        return status(422, "Invalid", "metadata.name: Required value");
    };
    if state.pods().contains_key(&(ns.clone(), name.clone())) {
        return status(
            409,
            "AlreadyExists",
            &format!("pods \"{name}\" already exists"),
        );
    }
    let body = match container_body(&state, &pod) {
        Ok(b) => b,
        Err(e) => return status(422, "Invalid", &e),
    };
    let container = format!("kube-{}-{ns}-{name}", state.id);
    let started = async {
        state.engine.create_container(&container, &body).await?;
        state.engine.start_container(&container).await?;
        // A cluster's emptyDir is world-writable whatever the image has
        // at its path; an engine's tmpfs takes the image directory's mode.
        for path in body.host_config.tmpfs.keys() {
            let spec = pocketdock::engine::ExecSpec {
                cmd: vec!["chmod".into(), "1777".into(), path.clone()],
                user: Some("0".into()),
                ..pocketdock::engine::ExecSpec::default()
            };
            let id = state.engine.exec_create(&container, &spec).await?;
            state.engine.exec_start(&id, false).await?;
        }
        Ok::<(), pocketdock::Error>(())
    };
    let mut pod = with_meta(pod, &ns);
    let version = watch::publish(&state, "ADDED", &ns, pod.clone());
    pod["metadata"]["resourceVersion"] = json!(version.to_string());
    if let Err(e) = started.await {
        // A pod whose container cannot be made stays Pending, as an
        // image that cannot be pulled does.
        let _ = state.engine.remove_container(&container, true).await;
        let mut pending = pod.clone();
        pending["status"] = json!({"phase": "Pending", "containerStatuses": [{
            "name": "sandbox", "image": body.image, "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ErrImagePull", "message": e.to_string()}}}]});
        state
            .pods()
            .insert((ns, name), PodEntry::new(pending.clone(), String::new()));
        return (axum::http::StatusCode::CREATED, Json(pending)).into_response();
    }
    let mut entry = PodEntry::new(pod.clone(), container);
    entry.unscheduled_until = lock(&state.pending).map(|d| std::time::Instant::now() + d);
    state.pods().insert((ns, name), entry);
    let mut reply = pod;
    reply["status"] = json!({"phase": "Pending"});
    (axum::http::StatusCode::CREATED, Json(reply)).into_response()
}

/// The status of a pod the scheduler finds no node for.
fn unschedulable() -> Value {
    json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "lastTransitionTime": time_now(),
        "message": "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes \
                    are available: 1 No preemption victims found for incoming pod."}]})
}

/// The pod with its status: a fault's, or read from its container.
async fn with_status(state: &State, entry: PodEntry) -> Value {
    let mut pod = entry.pod;
    if let Some(forced) = entry.forced {
        pod["status"] = forced;
        return pod;
    }
    if entry
        .unscheduled_until
        .is_some_and(|t| std::time::Instant::now() < t)
    {
        pod["status"] = unschedulable();
        return pod;
    }
    if entry.container.is_empty() {
        return pod;
    }
    let image = pod["spec"]["containers"][0]["image"].clone();
    let status = match state
        .engine
        .inspect_container(&entry.container, false)
        .await
    {
        Ok(i) if i.state.running => {
            json!({"phase": "Running", "podIP": i.network_settings.ip_address,
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "sandbox", "image": image, "imageID": i.image,
                "ready": true, "restartCount": 0, "started": true,
                "state": {"running": {"startedAt": i.state.started_at}}}]})
        }
        Ok(i) => {
            let reason = if i.state.oom_killed {
                "OOMKilled"
            } else if i.state.exit_code == 0 {
                "Completed"
            } else {
                "Error"
            };
            json!({"phase": if i.state.exit_code == 0 { "Succeeded" } else { "Failed" },
                "containerStatuses": [{"name": "sandbox", "image": image, "imageID": i.image,
                    "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": i.state.exit_code, "reason": reason}}}]})
        }
        Err(_) => {
            json!({"phase": "Failed", "message": "the pod's container is gone", "reason": "Evicted"})
        }
    };
    pod["status"] = status;
    pod
}

/// `GET /api/v1/namespaces/{ns}/pods/{name}`.
pub async fn get(
    Extract(state): Extract<Arc<State>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let entry = state.pods().get(&(ns, name.clone())).cloned();
    match entry {
        Some(e) => Json(with_status(&state, e).await).into_response(),
        None => status(404, "NotFound", &format!("pods \"{name}\" not found")),
    }
}

/// Whether `labels` satisfy a selector of `k=v`, `k==v`, `k!=v` and `k`.
pub fn selects(selector: &str, labels: &Value) -> bool {
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        if let Some((k, v)) = term.split_once("!=") {
            labels[k].as_str() != Some(v)
        } else if let Some((k, v)) = term.split_once('=') {
            labels[k].as_str() == Some(v.trim_start_matches('='))
        } else {
            labels.get(term).is_some()
        }
    })
}

/// `GET /api/v1/namespaces/{ns}/pods?labelSelector=`, or a watch.
pub async fn list(
    Extract(state): Extract<Arc<State>>,
    Path(ns): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if q.get("watch").is_some_and(|w| w == "true" || w == "1") {
        return watch::watch(&state, ns, &q);
    }
    let selector = q.get("labelSelector").cloned().unwrap_or_default();
    let entries: Vec<PodEntry> = state
        .pods()
        .iter()
        .filter(|((n, _), e)| *n == ns && selects(&selector, &e.pod["metadata"]["labels"]))
        .map(|(_, e)| e.clone())
        .collect();
    let mut items = Vec::new();
    for e in entries {
        items.push(with_status(&state, e).await);
    }
    let version = state
        .version
        .load(std::sync::atomic::Ordering::SeqCst)
        .to_string();
    Json(json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": version}, "items": items}))
        .into_response()
}

/// `DELETE /api/v1/namespaces/{ns}/pods/{name}`.
pub async fn delete(
    Extract(state): Extract<Arc<State>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let entry = state.pods().remove(&(ns.clone(), name.clone()));
    match entry {
        Some(e) => {
            watch::publish(&state, "DELETED", &ns, e.pod.clone());
            if !e.container.is_empty() {
                let _ = state.engine.remove_container(&e.container, true).await;
            }
            Json(e.pod).into_response()
        }
        None => status(404, "NotFound", &format!("pods \"{name}\" not found")),
    }
}
