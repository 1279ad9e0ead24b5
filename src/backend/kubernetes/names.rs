//! A sandbox's name on a pod. Pod names never change, so a warm pod that
//! is claimed keeps its own and carries the claimed name as label
//! [`NAME`] (fitted, for selection) and annotation (exact): the engines'
//! rename, as pods allow it. Every operation first resolves a name to
//! its pod: the pod of that name, else the pod claimed under it.
//!
//! One name, one sandbox: whoever gives a pod a name (a create, a claim)
//! writes first and looks after, and steps back when another pod answers
//! to it too. Of two that race, the later one sees the earlier.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};

use super::error::{from_kube, pod_missing};
use super::{labels, Kubernetes};
use crate::error::{Error, Result};

/// The label and annotation of the name a pod was claimed under.
pub(super) const NAME: &str = "pocketdock.io/name";

/// How often a claim reads a pod again after another write came first.
const CLAIM_TRIES: usize = 3;

/// Names this process resolved: name to pod (shared by a backend's copies).
#[derive(Debug, Clone, Default)]
pub(super) struct Names(Arc<Mutex<HashMap<String, String>>>);

impl Names {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, String>) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(super) fn set(&self, name: &str, pod: &str) {
        self.with(|m| m.insert(name.to_string(), pod.to_string()));
    }

    /// Forget every name of `pod` (removed).
    pub(super) fn forget(&self, pod: &str) {
        self.with(|m| m.retain(|_, p| p != pod));
    }

    fn get(&self, name: &str) -> Option<String> {
        self.with(|m| m.get(name).cloned())
    }
}

/// The name `pod` was claimed under, if it was.
pub(super) fn claimed_name(pod: &Pod) -> Option<&str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(NAME)
        .map(String::as_str)
}

/// The engines' answer to a rename onto a name in use.
fn in_use(op: &'static str, name: &str) -> Error {
    Error::Api {
        op,
        status: 409,
        message: format!("Kubernetes: the name {name} is already in use by another pod"),
    }
}

impl Kubernetes {
    /// The pod that answers to `name`: the pod of that name, else the one
    /// claimed under it; `name` itself when neither does (the operation
    /// then finds it gone).
    pub(super) async fn pod_of(&self, name: &str) -> String {
        if let Some(pod) = self.names.get(name) {
            return pod;
        }
        match self.pods().get_opt(name).await {
            Ok(Some(_)) => {
                self.names.set(name, name);
                return name.to_string();
            }
            Ok(None) => {}
            Err(_) => return name.to_string(),
        }
        match self.claimed_as(name).await.as_deref() {
            Ok([pod]) => {
                self.names.set(name, pod);
                pod.clone()
            }
            _ => name.to_string(),
        }
    }

    /// The pods claimed under `name` and not being deleted.
    async fn claimed_as(&self, name: &str) -> Result<Vec<String>> {
        let selector = format!("{NAME}={}", labels::value(name));
        Ok(self
            .living(&selector)
            .await?
            .into_iter()
            .filter(|p| claimed_name(p) == Some(name))
            .filter_map(|p| p.metadata.name)
            .collect())
    }

    /// Whether a pod other than `own` answers to `name`.
    pub(super) async fn taken(&self, name: &str, own: &str) -> Result<bool> {
        if name != own {
            let other = self
                .pods()
                .get_opt(name)
                .await
                .map_err(|e| from_kube("get the pod", e))?;
            if other.is_some_and(|p| p.metadata.deletion_timestamp.is_none()) {
                return Ok(true);
            }
        }
        Ok(self.claimed_as(name).await?.iter().any(|p| p != own))
    }

    /// Claim warm pod `pod` under `name`, as the engines rename: a 404 when
    /// the pod is gone or someone else claimed it first, a 409 when another
    /// pod answers to `name`.
    pub(in crate::backend) async fn claim_as(&self, pod: &str, name: &str) -> Result<()> {
        const OP: &str = "rename the pod";
        if self.taken(name, pod).await? {
            return Err(in_use(OP, name));
        }
        let mut claimed = false;
        for _ in 0..CLAIM_TRIES {
            let Some(current) = self
                .pods()
                .get_opt(pod)
                .await
                .map_err(|e| from_kube(OP, e))?
            else {
                return Err(pod_missing(OP, pod));
            };
            if claimed_name(&current).is_some() || current.metadata.deletion_timestamp.is_some() {
                return Err(pod_missing(OP, pod));
            }
            // The version read is a precondition: of two claimers, one wins.
            let patch = serde_json::json!({"metadata": {
                "resourceVersion": current.metadata.resource_version,
                "labels": {NAME: labels::value(name)},
                "annotations": {NAME: name},
            }});
            match self
                .pods()
                .patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    claimed = true;
                    break;
                }
                // Changed since read (a claim, or the kubelet's status).
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(kube::Error::Api(s)) if s.code == 404 => return Err(pod_missing(OP, pod)),
                Err(e) => return Err(from_kube(OP, e)),
            }
        }
        if !claimed {
            return Err(pod_missing(OP, pod));
        }
        if self.taken(name, pod).await.unwrap_or(true) {
            let undo = serde_json::json!({"metadata": {
                "labels": {NAME: null},
                "annotations": {NAME: null},
            }});
            let _ = self
                .pods()
                .patch(pod, &PatchParams::default(), &Patch::Merge(&undo))
                .await;
            return Err(in_use(OP, name));
        }
        self.names.set(name, pod);
        Ok(())
    }

    /// After creating pod `name`: remove it again when a claimed pod
    /// answers to that name too.
    pub(super) async fn keep_unique(&self, name: &str) -> Result<()> {
        const OP: &str = "create the pod";
        match self.taken(name, name).await {
            Ok(false) => {
                self.names.set(name, name);
                Ok(())
            }
            Ok(true) => {
                let _ = self.remove(name).await;
                Err(in_use(OP, name))
            }
            Err(e) => {
                let _ = self.remove(name).await;
                Err(e)
            }
        }
    }
}
