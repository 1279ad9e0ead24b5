//! kube-rs errors as the library's: a status the API server answered stays
//! an [`Error::Api`] (so a missing pod is a 404 the sandbox layer reads as
//! a gone sandbox); anything else says it came from Kubernetes.

use crate::error::Error;

/// `e`, from doing `op`.
pub(in crate::backend) fn from_kube(op: &'static str, e: kube::Error) -> Error {
    match e {
        kube::Error::Api(status) => Error::Api {
            op,
            status: status.code,
            message: format!("Kubernetes: {}", status.message),
        },
        other => Error::Kubernetes {
            op,
            detail: format!(
                "{other}\nhint: check that the cluster in your kubeconfig answers \
                 (`kubectl get pods`)"
            ),
        },
    }
}

/// An operation pods do not have.
pub(in crate::backend) fn unsupported(op: &'static str) -> Error {
    Error::Kubernetes {
        op,
        detail: "pods cannot do this\nhint: run this on a Podman or Docker engine".into(),
    }
}

/// A missing pod, as the engines' 404 reads.
pub(in crate::backend) fn pod_missing(op: &'static str, name: &str) -> Error {
    Error::Api {
        op,
        status: 404,
        message: format!("Kubernetes: no such container: pod {name} not found"),
    }
}
