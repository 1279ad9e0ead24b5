//! NetworkPolicies (`networking.k8s.io/v1`): create, get, list, delete,
//! stored as sent. A policy that denies all egress is enforced as a network
//! plugin that honours policies would: the containers of the pods it
//! selects (when it is created) are disconnected from every network. No
//! garbage collector removes one whose owner is gone.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State as Extract};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{lock, status, watch, State};

/// `POST .../networkpolicies`.
pub async fn create(
    Extract(state): Extract<Arc<State>>,
    Path(ns): Path<String>,
    Json(mut policy): Json<Value>,
) -> Response {
    let Some(name) = policy["metadata"]["name"].as_str().map(str::to_string) else {
        return status(422, "Invalid", "metadata.name: Required value");
    };
    if policy["spec"]["podSelector"].is_null() {
        return status(422, "Invalid", "spec.podSelector: Required value");
    }
    {
        let mut policies = lock(&state.policies);
        if policies.contains_key(&(ns.clone(), name.clone())) {
            return status(
                409,
                "AlreadyExists",
                &format!("networkpolicies.networking.k8s.io \"{name}\" already exists"),
            );
        }
        policy["kind"] = json!("NetworkPolicy");
        policy["apiVersion"] = json!("networking.k8s.io/v1");
        policy["metadata"]["namespace"] = json!(ns);
        policy["metadata"]["resourceVersion"] = json!(watch::next_version(&state).to_string());
        policy["metadata"]["creationTimestamp"] = json!(super::pods::time_now());
        policies.insert((ns.clone(), name), policy.clone());
    }
    if denies_all_egress(&policy) {
        for container in selected(&state, &ns, &policy["spec"]["podSelector"]) {
            isolate(&state, &container).await;
        }
    }
    (axum::http::StatusCode::CREATED, Json(policy)).into_response()
}

/// Egress is a policy type and no egress rule lets anything out.
fn denies_all_egress(policy: &Value) -> bool {
    let spec = &policy["spec"];
    spec["policyTypes"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t == "Egress"))
        && spec["egress"].as_array().is_none_or(Vec::is_empty)
}

/// The containers of the pods of `ns` that `selector`'s `matchLabels` pick.
fn selected(state: &State, ns: &str, selector: &Value) -> Vec<String> {
    let wanted = selector["matchLabels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    state
        .pods()
        .iter()
        .filter(|((n, _), e)| {
            n == ns
                && wanted
                    .iter()
                    .all(|(k, v)| &e.pod["metadata"]["labels"][k] == v)
        })
        .map(|(_, e)| e.container.clone())
        .filter(|c| !c.is_empty())
        .collect()
}

/// Disconnect `container` from each of its networks (the docker CLI speaks
/// to either engine's socket).
async fn isolate(state: &State, container: &str) {
    let Ok(raw) = state.engine.inspect_container_raw(container).await else {
        return;
    };
    let socket = format!("unix://{}", state.engine.info().socket.display());
    let networks = raw["NetworkSettings"]["Networks"]
        .as_object()
        .map(|n| n.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    for network in networks {
        let _ = std::process::Command::new("docker")
            .args([
                "-H",
                &socket,
                "network",
                "disconnect",
                "-f",
                &network,
                container,
            ])
            .output();
    }
}

fn missing(name: &str) -> Response {
    status(
        404,
        "NotFound",
        &format!("networkpolicies.networking.k8s.io \"{name}\" not found"),
    )
}

/// `GET .../networkpolicies/{name}`.
pub async fn get(
    Extract(state): Extract<Arc<State>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    match lock(&state.policies).get(&(ns, name.clone())) {
        Some(p) => Json(p.clone()).into_response(),
        None => missing(&name),
    }
}

/// `GET .../networkpolicies?labelSelector=`.
pub async fn list(
    Extract(state): Extract<Arc<State>>,
    Path(ns): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let selector = q.get("labelSelector").cloned().unwrap_or_default();
    let items: Vec<Value> = lock(&state.policies)
        .iter()
        .filter(|((n, _), p)| *n == ns && super::pods::selects(&selector, &p["metadata"]["labels"]))
        .map(|(_, p)| p.clone())
        .collect();
    Json(
        json!({"kind": "NetworkPolicyList", "apiVersion": "networking.k8s.io/v1",
        "metadata": {}, "items": items}),
    )
    .into_response()
}

/// `DELETE .../networkpolicies/{name}`.
pub async fn delete(
    Extract(state): Extract<Arc<State>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    match lock(&state.policies).remove(&(ns, name.clone())) {
        Some(p) => Json(p).into_response(),
        None => missing(&name),
    }
}
