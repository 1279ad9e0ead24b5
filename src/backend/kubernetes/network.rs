//! `network: false` on a pod: a deny-all NetworkPolicy selecting it,
//! named after it and owned by it (the cluster's garbage collector removes
//! it with the pod; removal deletes it too). Only a network plugin that
//! enforces NetworkPolicies makes it hold.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::Api;

use super::error::from_kube;
use super::Kubernetes;
use crate::engine::CreateContainer;
use crate::error::Result;

/// Whether the create cuts the sandbox's network.
pub(super) fn cut(body: &CreateContainer) -> bool {
    body.host_config.network_mode.as_deref() == Some("none")
}

/// The deny-all policy for `pod` (as created: its name, uid, labels).
pub(super) fn deny_all(pod: &Pod) -> NetworkPolicy {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let labels: BTreeMap<String, String> = pod.metadata.labels.clone().unwrap_or_default();
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(labels.clone()),
            owner_references: pod.metadata.uid.clone().map(|uid| {
                vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    name,
                    uid,
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        },
        // No rules: nothing in, nothing out.
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(labels),
                match_expressions: None,
            }),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: None,
            egress: None,
        }),
    }
}

impl Kubernetes {
    fn policies(&self) -> Api<NetworkPolicy> {
        Api::namespaced(self.client(), &self.namespace)
    }

    /// Create the deny-all policy of `pod`.
    pub(super) async fn isolate(&self, pod: &Pod) -> Result<()> {
        self.policies()
            .create(&PostParams::default(), &deny_all(pod))
            .await
            .map(drop)
            .map_err(|e| from_kube("create the pod's NetworkPolicy", e))
    }

    /// Delete pod `name`'s policy; none is fine (the sandbox had a network,
    /// or the garbage collector came first).
    pub(super) async fn unisolate(&self, name: &str) -> Result<()> {
        match self.policies().delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(from_kube("delete the pod's NetworkPolicy", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_selects_its_pod_and_allows_nothing() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "pd-1", "uid": "u-1", "labels": {"pocketdock.instance": "pd-1"}}
        }))
        .unwrap();
        let v = serde_json::to_value(deny_all(&pod)).unwrap();
        assert_eq!(
            v["spec"]["podSelector"]["matchLabels"]["pocketdock.instance"],
            "pd-1"
        );
        assert_eq!(
            v["spec"]["policyTypes"],
            serde_json::json!(["Ingress", "Egress"])
        );
        assert!(v["spec"].get("ingress").is_none() && v["spec"].get("egress").is_none());
        assert_eq!(v["metadata"]["ownerReferences"][0]["uid"], "u-1");
    }
}
