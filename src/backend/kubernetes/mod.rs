//! The Kubernetes backend: a pod per sandbox in one namespace, commands
//! over the exec WebSocket, files as tar over exec (docs/kubernetes.md).
//! What pods cannot do (commit, host mounts, stop and start) is refused at
//! plan time through [`Capabilities::KUBERNETES`](super::Capabilities::KUBERNETES).

mod error;
mod exec;
mod files;
mod labels;
mod pod;
mod pods;
mod status;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use crate::engine::{Engine, ExecInput, ExecOutput};
use crate::error::{Error, Result};

pub(super) use error::unsupported;

/// A started command's halves, its stdin required.
pub(super) fn attached(
    (output, input): (ExecOutput, Option<ExecInput>),
) -> Result<(ExecOutput, ExecInput)> {
    let input = input.ok_or_else(|| Error::Kubernetes {
        op: "start exec",
        detail: "the exec's stdin was not attached".into(),
    })?;
    Ok((output, input))
}

/// A namespace of a Kubernetes cluster, as a backend.
#[derive(Clone)]
pub struct Kubernetes {
    config: kube::Config,
    client: kube::Client,
    namespace: String,
    execs: exec::Execs,
    stand_in: Engine,
}

impl std::fmt::Debug for Kubernetes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubernetes")
            .field("server", &self.server())
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Kubernetes {
    /// The cluster of the standard configuration (`KUBECONFIG`, then
    /// `~/.kube/config`, then in-cluster), in `namespace` or the current
    /// context's.
    pub async fn connect(namespace: Option<&str>) -> Result<Kubernetes> {
        let config = kube::Config::infer().await.map_err(|e| Error::Kubernetes {
            op: "read the kubeconfig",
            detail: format!(
                "{e}\nhint: set KUBECONFIG to a kubeconfig file, or run inside a cluster"
            ),
        })?;
        Kubernetes::with_config(config, namespace)
    }

    /// The cluster of the kubeconfig file at `path` (its current context),
    /// in `namespace` or the context's.
    pub async fn from_kubeconfig(
        path: &std::path::Path,
        namespace: Option<&str>,
    ) -> Result<Kubernetes> {
        let bad = |e: &dyn std::fmt::Display| Error::Kubernetes {
            op: "read the kubeconfig",
            detail: format!(
                "{}: {e}\nhint: check the file's clusters and contexts",
                path.display()
            ),
        };
        let file = kube::config::Kubeconfig::read_from(path).map_err(|e| bad(&e))?;
        let config =
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| bad(&e))?;
        Kubernetes::with_config(config, namespace)
    }

    /// The cluster `config` describes, in `namespace` or its default one.
    pub fn with_config(mut config: kube::Config, namespace: Option<&str>) -> Result<Kubernetes> {
        if let Some(ns) = namespace {
            config.default_namespace = ns.to_string();
        }
        let client = client(&config)?;
        let stand_in =
            Engine::stand_in(&config.cluster_url.to_string()).ok_or_else(|| Error::Kubernetes {
                op: "connect",
                detail: "could not set up the local side of the backend".into(),
            })?;
        Ok(Kubernetes {
            namespace: config.default_namespace.clone(),
            client,
            config,
            execs: exec::Execs::default(),
            stand_in,
        })
    }

    /// The API server's URL.
    #[must_use]
    pub fn server(&self) -> String {
        self.config.cluster_url.to_string()
    }

    /// The namespace its pods live in.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// An engine that answers nothing, for the sandbox layer's
    /// engine-only calls (see `Engine::stand_in`).
    pub(crate) fn stand_in(&self) -> &Engine {
        &self.stand_in
    }

    /// The same backend on connections of its own (a client's connections
    /// belong to the runtime that opened them).
    #[must_use]
    pub fn detached(&self) -> Kubernetes {
        let mut copy = self.clone();
        if let Ok(client) = client(&self.config) {
            copy.client = client;
        }
        copy
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
}

fn client(config: &kube::Config) -> Result<kube::Client> {
    kube::Client::try_from(config.clone()).map_err(|e| Error::Kubernetes {
        op: "connect",
        detail: format!("{e}\nhint: check the cluster's entry in your kubeconfig"),
    })
}
