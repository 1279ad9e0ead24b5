//! A pod lost under a running command (deleted, evicted), seen through a
//! watch on that one pod, so that the command ends with why instead of
//! waiting on an exec stream a gone pod may never close.

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{WatchEvent, WatchParams};

use super::Kubernetes;
use crate::error::Error;

/// The words for a deleted pod.
pub(super) const DELETED: &str = "the pod was deleted";

/// How long to wait before asking again after the API server failed.
const AGAIN: Duration = Duration::from_secs(1);

/// Why `pod` can no longer run commands, if it cannot.
pub(super) fn loss(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return Some(DELETED.into());
    }
    let status = pod.status.as_ref()?;
    let message = status.message.as_deref().unwrap_or("no message");
    match (status.phase.as_deref()?, status.reason.as_deref()) {
        ("Failed", Some("Evicted")) => Some(format!("evicted: {message}")),
        (phase @ ("Failed" | "Succeeded"), reason) => Some(format!(
            "the pod is {phase} ({}): {message}",
            reason.unwrap_or("no reason given")
        )),
        _ => None,
    }
}

/// A lost sandbox, as the library's error.
pub(super) fn lost(name: &str, why: String) -> Error {
    Error::SandboxLost {
        name: name.to_string(),
        why,
    }
}

impl Kubernetes {
    /// Resolves with why once pod `name` is lost; pends while it lives.
    /// Each round reads the pod, then watches it from that version, so no
    /// change between the two is missed.
    pub(super) async fn lost(&self, name: &str) -> String {
        let params = WatchParams::default().fields(&format!("metadata.name={name}"));
        loop {
            let version = match self.pods().get_opt(name).await {
                Ok(None) => return DELETED.into(),
                Ok(Some(pod)) => match loss(&pod) {
                    Some(why) => return why,
                    None => pod.metadata.resource_version.unwrap_or_default(),
                },
                Err(_) => {
                    tokio::time::sleep(AGAIN).await;
                    continue;
                }
            };
            let Ok(events) = self.pods().watch(&params, &version).await else {
                tokio::time::sleep(AGAIN).await;
                continue;
            };
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                match event {
                    Ok(WatchEvent::Deleted(_)) => return DELETED.into(),
                    Ok(WatchEvent::Added(p) | WatchEvent::Modified(p)) => {
                        if let Some(why) = loss(&p) {
                            return why;
                        }
                    }
                    Ok(WatchEvent::Bookmark(_)) => {}
                    // An expired version or a broken stream: read it again.
                    Ok(WatchEvent::Error(_)) | Err(_) => break,
                }
            }
        }
    }

    /// The error for pod `name` when it is lost, asked once.
    pub(in crate::backend) async fn lost_now(&self, name: &str) -> Option<Error> {
        self.loss_now(name).await.map(|why| lost(name, why))
    }

    /// Why pod `name` is lost, asked once, if it is.
    pub(super) async fn loss_now(&self, name: &str) -> Option<String> {
        match self.pods().get_opt(name).await {
            Ok(None) => Some(DELETED.into()),
            Ok(Some(pod)) => loss(&pod),
            Err(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn eviction_deletion_and_a_living_pod_read_apart() {
        let evicted = pod(serde_json::json!({"metadata": {"name": "pd-1"},
            "status": {"phase": "Failed", "reason": "Evicted",
                "message": "The node was low on resource: memory."}}));
        assert_eq!(
            loss(&evicted).as_deref(),
            Some("evicted: The node was low on resource: memory.")
        );
        let deleting = pod(serde_json::json!({"metadata": {"name": "pd-1",
            "deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}}));
        assert_eq!(loss(&deleting).as_deref(), Some(DELETED));
        let running = pod(serde_json::json!({"metadata": {"name": "pd-1"},
            "status": {"phase": "Running"}}));
        assert_eq!(loss(&running), None);
    }
}
