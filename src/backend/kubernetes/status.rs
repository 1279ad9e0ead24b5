//! A pod's status as the engine's inspect and listing read: what the
//! sandbox layer asks (running, exit code, OOM-killed, labels, limits).

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use super::{labels, names, recreate};
use crate::engine::{
    ContainerConfig, ContainerInspect, ContainerState, ContainerSummary, InspectHostConfig,
    NetworkSettings,
};

/// Where a pod is on its way to running.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Progress {
    /// Its container runs.
    Running,
    /// Not yet: scheduling, pulling, creating.
    Waiting(String),
    /// It never will: why, with the next step.
    Failed(String),
}

/// Waiting reasons that do not resolve by waiting longer.
const HOPELESS: [&str; 6] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
];

fn container(pod: &Pod) -> Option<&ContainerStatus> {
    pod.status.as_ref()?.container_statuses.as_ref()?.first()
}

/// How far `pod` is.
pub(super) fn progress(pod: &Pod) -> Progress {
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    let state = container(pod).and_then(|c| c.state.as_ref());
    if let Some(w) = state.and_then(|s| s.waiting.as_ref()) {
        let reason = w.reason.as_deref().unwrap_or("");
        let message = w.message.as_deref().unwrap_or("");
        if HOPELESS.contains(&reason) {
            return Progress::Failed(format!(
                "{reason}: {message}\nhint: check that the cluster can pull the image \
                 (its name, a pull secret)"
            ));
        }
        return Progress::Waiting(format!("{reason} {message}").trim().to_string());
    }
    if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
        return Progress::Failed(format!(
            "its container exited with code {} ({})\nhint: the image's command must \
             keep running; check the pod's logs",
            t.exit_code,
            t.reason.as_deref().unwrap_or("no reason given"),
        ));
    }
    match phase {
        "Running" if state.is_some_and(|s| s.running.is_some()) => Progress::Running,
        "Failed" | "Succeeded" => Progress::Failed(format!(
            "the pod is {phase}: {}",
            pod.status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .unwrap_or("no message")
        )),
        _ => Progress::Waiting(
            unscheduled(pod).map_or_else(|| phase.to_string(), |m| format!("not scheduled: {m}")),
        ),
    }
}

/// The scheduler's reason a pod is not placed yet.
pub(super) fn unscheduled(pod: &Pod) -> Option<String> {
    let c = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
    Some(
        c.message
            .as_deref()
            .or(c.reason.as_deref())
            .unwrap_or("no reason given")
            .to_string(),
    )
}

fn timestamp(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> String {
    t.and_then(|t| serde_json::to_value(t).ok())
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A pod as the engine's inspect: its name is its id, and its name the
/// one it was claimed under, if it was.
pub(super) fn inspect(pod: &Pod) -> ContainerInspect {
    let id = pod.metadata.name.clone().unwrap_or_default();
    let name = names::claimed_name(pod).map_or_else(|| id.clone(), str::to_string);
    let network_mode = recreate::create_of(pod)
        .and_then(|c| c.host_config.network_mode)
        .unwrap_or_default();
    let spec = pod.spec.as_ref().and_then(|s| s.containers.first());
    let status = container(pod);
    let state = status.and_then(|c| c.state.as_ref());
    let terminated = state.and_then(|s| s.terminated.as_ref()).or_else(|| {
        status
            .and_then(|c| c.last_state.as_ref())
            .and_then(|s| s.terminated.as_ref())
    });
    let running = state.is_some_and(|s| s.running.is_some());
    let limits = spec
        .and_then(|c| c.resources.as_ref())
        .and_then(|r| r.limits.as_ref());
    let memory = limits
        .and_then(|l| l.get("memory"))
        .and_then(|q| q.0.parse::<crate::size::ByteSize>().ok())
        .map_or(0, crate::size::ByteSize::bytes) as i64;
    let nano_cpus = limits
        .and_then(|l| l.get("cpu"))
        .and_then(|q| cpu_nanos(&q.0))
        .unwrap_or(0);
    ContainerInspect {
        id,
        name,
        created: timestamp(pod.metadata.creation_timestamp.as_ref()),
        image: spec.and_then(|c| c.image.clone()).unwrap_or_default(),
        state: ContainerState {
            status: if running {
                "running"
            } else if terminated.is_some() {
                "exited"
            } else {
                "created"
            }
            .into(),
            running,
            paused: false,
            oom_killed: terminated.is_some_and(|t| t.reason.as_deref() == Some("OOMKilled")),
            exit_code: terminated.map_or(0, |t| i64::from(t.exit_code)),
            started_at: timestamp(
                state
                    .and_then(|s| s.running.as_ref())
                    .and_then(|r| r.started_at.as_ref()),
            ),
            finished_at: timestamp(terminated.and_then(|t| t.finished_at.as_ref())),
        },
        config: ContainerConfig {
            image: spec.and_then(|c| c.image.clone()).unwrap_or_default(),
            labels: Some(labels::from_pod(
                pod.metadata.labels.as_ref(),
                pod.metadata.annotations.as_ref(),
            )),
            env: spec.and_then(|c| c.env.as_ref()).map(|env| {
                env.iter()
                    .map(|e| format!("{}={}", e.name, e.value.as_deref().unwrap_or("")))
                    .collect()
            }),
            working_dir: spec.and_then(|c| c.working_dir.clone()).unwrap_or_default(),
            user: String::new(),
            entrypoint: spec.and_then(|c| c.command.clone()),
            cmd: spec.and_then(|c| c.args.clone()),
        },
        host_config: InspectHostConfig {
            memory,
            nano_cpus,
            network_mode,
            ..InspectHostConfig::default()
        },
        network_settings: NetworkSettings {
            ip_address: pod
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.clone())
                .unwrap_or_default(),
            ..NetworkSettings::default()
        },
        size_rw: None,
    }
}

/// A pod as one entry of the engine's listing.
pub(super) fn summary(pod: &Pod) -> ContainerSummary {
    let i = inspect(pod);
    ContainerSummary {
        names: vec![i.name.clone()],
        image: i.config.image.clone(),
        image_id: String::new(),
        created: pod
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(0, |t| t.0.timestamp()),
        state: i.state.status.clone(),
        status: pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default(),
        labels: i.config.labels,
        id: i.id,
    }
}

/// A CPU quantity (`500m`, `2`, `0.5`) in 1e-9 CPUs.
fn cpu_nanos(q: &str) -> Option<i64> {
    if let Some(milli) = q.strip_suffix('m') {
        return milli.parse::<i64>().ok().map(|m| m * 1_000_000);
    }
    q.parse::<f64>().ok().map(|c| (c * 1e9) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn an_oom_killed_container_reads_as_the_engine_says_it() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "pd-1", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "sandbox", "image": "busybox",
                "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}}}]},
            "status": {"phase": "Failed", "containerStatuses": [{"name": "sandbox",
                "image": "busybox", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}
        }));
        let i = inspect(&p);
        assert!(i.state.oom_killed);
        assert!(!i.state.running);
        assert_eq!(i.state.exit_code, 137);
        assert_eq!(i.host_config.memory, 64 << 20);
        assert_eq!(i.host_config.nano_cpus, 500_000_000);
        assert_eq!(i.label("a"), Some("b"));
        assert!(matches!(progress(&p), Progress::Failed(_)));
    }

    #[test]
    fn an_image_that_cannot_be_pulled_fails_at_once() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "pd-1"},
            "status": {"phase": "Pending", "containerStatuses": [{"name": "sandbox",
                "image": "nope", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}]}
        }));
        assert!(matches!(progress(&p), Progress::Failed(m) if m.contains("ErrImagePull")));
    }

    #[test]
    fn a_listed_pod_is_as_old_as_the_api_server_says() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "pd-1", "creationTimestamp": "2026-11-29T06:11:49Z"}
        }));
        assert_eq!(summary(&p).created, 1_795_932_709);
        assert_eq!(inspect(&p).created, "2026-11-29T06:11:49Z");
    }
}
