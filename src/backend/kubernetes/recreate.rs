//! A pod made again like another (a warm pool's refill): each pod keeps
//! the container create it was made from, in annotation [`CREATE`], and
//! its raw inspect gives it back in the engines' shape (`Config` and
//! `HostConfig`), so the sandbox layer's recreate works on pods too, with
//! the same containment and network.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Map, Value};

use super::{labels, status, Kubernetes};
use crate::engine::CreateContainer;
use crate::error::{Error, Result};

/// The annotation holding the create a pod was made from, as JSON.
pub(super) const CREATE: &str = "pocketdock.io/create";

/// The create `pod` was made from, where it says.
pub(super) fn create_of(pod: &Pod) -> Option<CreateContainer> {
    let json = pod.metadata.annotations.as_ref()?.get(CREATE)?;
    serde_json::from_str(json).ok()
}

/// The create as kept on its pod: without the labels, which the pod keeps
/// already (and a claim changes).
pub(super) fn kept(body: &CreateContainer) -> String {
    let mut value = serde_json::to_value(body).unwrap_or_default();
    if let Value::Object(m) = &mut value {
        m.remove("Labels");
    }
    value.to_string()
}

/// `pod` as an engine's raw inspect: its state and name as
/// [`status::inspect`] reads them, its `Config` and `HostConfig` those of
/// its create, with its labels now.
pub(super) fn raw(pod: &Pod) -> Option<Value> {
    let create = serde_json::to_value(create_of(pod)?).ok()?;
    let Value::Object(mut config) = create else {
        return None;
    };
    let host = config.remove("HostConfig").unwrap_or(Value::Null);
    let i = status::inspect(pod);
    config.insert(
        "Labels".into(),
        json!(labels::from_pod(
            pod.metadata.labels.as_ref(),
            pod.metadata.annotations.as_ref()
        )),
    );
    let mut state = Map::new();
    state.insert("Status".into(), json!(i.state.status));
    state.insert("Running".into(), json!(i.state.running));
    state.insert("OOMKilled".into(), json!(i.state.oom_killed));
    state.insert("ExitCode".into(), json!(i.state.exit_code));
    Some(json!({
        "Id": i.id,
        "Name": i.name,
        "Created": i.created,
        "Image": i.image,
        "State": state,
        "Config": config,
        "HostConfig": host,
    }))
}

impl Kubernetes {
    /// The raw inspect of the pod that answers to `name`.
    pub(in crate::backend) async fn inspect_raw(&self, name: &str) -> Result<Value> {
        let pod = self.pod_named("inspect the pod", name).await?;
        raw(&pod).ok_or_else(|| Error::Kubernetes {
            op: "inspect the pod",
            detail: format!(
                "pod {name} does not say what it was created from (annotation {CREATE})\n\
                 hint: it was made by an older pocketdock or by hand; remove it"
            ),
        })
    }

    /// Create pod `name` from an engine create body (a recreate's).
    pub(in crate::backend) async fn create_raw(&self, name: &str, body: &Value) -> Result<String> {
        let body: CreateContainer =
            serde_json::from_value(body.clone()).map_err(|e| Error::Protocol {
                op: "recreate the pod",
                detail: e.to_string(),
            })?;
        self.create(name, &body).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::names;
    use super::*;
    use crate::engine::{ContainerInspect, HostConfig};

    #[test]
    fn a_pod_inspects_as_the_create_it_was_made_from() {
        let body = CreateContainer {
            image: "pocketdock/minimal".into(),
            labels: BTreeMap::from([("pocketdock.pool".into(), "k1".into())]),
            env: vec!["A=1".into()],
            open_stdin: true,
            host_config: HostConfig {
                memory: Some(256 << 20),
                network_mode: Some("none".into()),
                cap_drop: vec!["ALL".into()],
                readonly_rootfs: true,
                tmpfs: BTreeMap::from([("/tmp".into(), "size=64m".into())]),
                ..HostConfig::default()
            },
            ..CreateContainer::default()
        };
        let mut pod = super::super::pod::pod("pd-1", &body, &super::super::pull::Pull::default());
        pod.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(names::NAME.into(), "mine".into());
        let raw = raw(&pod).expect("a pod made here has its create");
        assert_eq!(raw["Id"], "pd-1");
        assert_eq!(raw["Name"], "mine");
        assert_eq!(raw["Config"]["Labels"]["pocketdock.pool"], "k1");
        assert_eq!(raw["HostConfig"]["NetworkMode"], "none");
        assert_eq!(raw["HostConfig"]["ReadonlyRootfs"], true);
        let inspected: ContainerInspect = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(inspected.short_name(), "mine");
        // What a recreate sends back creates the same pod spec.
        let again: CreateContainer = serde_json::from_value(json!({
            "Image": raw["Config"]["Image"],
            "Env": raw["Config"]["Env"],
            "Labels": raw["Config"]["Labels"],
            "OpenStdin": raw["Config"]["OpenStdin"],
            "HostConfig": raw["HostConfig"],
        }))
        .unwrap();
        let remade = super::super::pod::pod("pd-2", &again, &super::super::pull::Pull::default());
        assert_eq!(remade.spec, pod.spec);
    }

    #[test]
    fn a_pod_made_elsewhere_has_no_raw_inspect() {
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
        assert!(raw(&pod).is_none());
    }
}
