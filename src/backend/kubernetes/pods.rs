//! Pods as containers: create, wait until running, delete, inspect, list.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, PostParams};

use super::error::{from_kube, pod_missing};
use super::lost::{self, DELETED};
use super::status::{self, Progress};
use super::{labels, network, pod, Kubernetes};
use crate::engine::{ContainerInspect, ContainerSummary, CreateContainer};
use crate::error::{Error, Result};

/// How long a pod may take to run (scheduling and pulling included);
/// `POCKETDOCK_KUBERNETES_START_TIMEOUT` (seconds) or
/// [`Kubernetes::with_start_timeout`] changes it.
const START_TIMEOUT: Duration = Duration::from_mins(2);

/// How often a starting pod is asked again.
const POLL: Duration = Duration::from_millis(200);

pub(super) fn start_timeout() -> Duration {
    std::env::var("POCKETDOCK_KUBERNETES_START_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(START_TIMEOUT, Duration::from_secs)
}

/// Whether `name` can be a pod's name (a DNS subdomain).
fn is_pod_name(name: &str) -> bool {
    name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

impl Kubernetes {
    /// Create the pod for `body`; its name is its id.
    pub(in crate::backend) async fn create(
        &self,
        name: &str,
        body: &CreateContainer,
    ) -> Result<String> {
        if !is_pod_name(name) {
            return Err(Error::Invalid {
                what: "pod name",
                value: name.to_string(),
                expected: "lowercase letters, digits, `-` and `.`, starting and ending with \
                           a letter or digit",
            });
        }
        let created = self
            .pods()
            .create(&PostParams::default(), &pod::pod(name, body, &self.pull))
            .await
            .map_err(|e| from_kube("create the pod", e))?;
        if network::cut(body) {
            if let Err(e) = self.isolate(&created).await {
                let _ = self.remove(name).await;
                return Err(e);
            }
        }
        self.keep_unique(name).await?;
        Ok(created.metadata.name.unwrap_or_else(|| name.to_string()))
    }

    /// Wait until the pod runs; for a pod that never will (an image the
    /// cluster cannot pull, a command that exits, deleted or evicted), why.
    /// One still not scheduled at the start limit is a lost sandbox.
    pub(in crate::backend) async fn start(&self, name: &str) -> Result<()> {
        const OP: &str = "start the pod";
        let deadline = tokio::time::Instant::now() + self.start_timeout;
        loop {
            let Some(pod) = self
                .pods()
                .get_opt(name)
                .await
                .map_err(|e| from_kube(OP, e))?
            else {
                return Err(lost::lost(name, DELETED.into()));
            };
            match status::progress(&pod) {
                Progress::Running => return Ok(()),
                Progress::Failed(why) => {
                    return Err(match lost::loss(&pod) {
                        Some(lost) if lost.starts_with("evicted") => lost::lost(name, lost),
                        _ => Error::Kubernetes {
                            op: OP,
                            detail: format!("pod {name}: {why}"),
                        },
                    })
                }
                Progress::Waiting(why) if tokio::time::Instant::now() >= deadline => {
                    return Err(self.too_slow(name, &pod, &why));
                }
                Progress::Waiting(_) => {}
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The error for pod `name`, not running at the start limit.
    fn too_slow(&self, name: &str, pod: &Pod, why: &str) -> Error {
        if let Some(message) = status::unscheduled(pod) {
            return lost::lost(name, format!("never scheduled: {message}"));
        }
        Error::Kubernetes {
            op: "start the pod",
            detail: format!(
                "pod {name} did not run within {}s ({why})\nhint: `kubectl describe pod \
                 {name}` says why; raise POCKETDOCK_KUBERNETES_START_TIMEOUT if the cluster \
                 is slow",
                self.start_timeout.as_secs()
            ),
        }
    }

    /// Delete the pod at once (grace 0), and its NetworkPolicy.
    pub(in crate::backend) async fn remove(&self, name: &str) -> Result<()> {
        let deleted = self
            .pods()
            .delete(name, &DeleteParams::default().grace_period(0))
            .await
            .map(drop)
            .map_err(|e| match e {
                kube::Error::Api(s) if s.code == 404 => pod_missing("remove the pod", name),
                e => from_kube("remove the pod", e),
            });
        self.names.forget(name);
        self.unisolate(name).await?;
        deleted
    }

    /// The pod as the engine's inspect.
    pub(in crate::backend) async fn inspect(&self, name: &str) -> Result<ContainerInspect> {
        Ok(status::inspect(
            &self.pod_named("inspect the pod", name).await?,
        ))
    }

    /// Pod `name`, or an error for `op` saying it is gone.
    pub(super) async fn pod_named(&self, op: &'static str, name: &str) -> Result<Pod> {
        self.pods()
            .get_opt(name)
            .await
            .map_err(|e| from_kube(op, e))?
            .ok_or_else(|| pod_missing(op, name))
    }

    /// The pods `selector` selects, but those being deleted.
    pub(super) async fn living(&self, selector: &str) -> Result<Vec<Pod>> {
        let params = ListParams::default().labels(selector);
        let pods = self
            .pods()
            .list(&params)
            .await
            .map_err(|e| from_kube("list pods", e))?;
        Ok(pods
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect())
    }

    /// Pods carrying every one of `filters` (`key` or `key=value`); with
    /// `all`, those that are not running too.
    pub(in crate::backend) async fn list(
        &self,
        all: bool,
        filters: &[String],
    ) -> Result<Vec<ContainerSummary>> {
        Ok(self
            .living(&labels::selector(filters))
            .await?
            .iter()
            .map(status::summary)
            .filter(|s| labels::matches(s.labels.as_ref().unwrap_or(&BTreeMap::default()), filters))
            .filter(|s| all || s.state == "running")
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::is_pod_name;

    #[test]
    fn pod_names_are_dns_subdomains() {
        assert!(is_pod_name("pd-0a1b2c3d"));
        assert!(!is_pod_name("My_Box"));
        assert!(!is_pod_name("-a"));
    }
}
