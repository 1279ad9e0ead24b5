//! [`Sandbox::with`]: a sandbox for the length of one async block.
//!
//! The block gets its own clone of the handle; whatever it returns, and
//! when it panics, the sandbox is shut down before `with` returns (or the
//! panic carries on). The drop guard covers what this cannot: a `with`
//! future that is itself dropped half-way (a timeout, a cancelled task).

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::future::FutureExt;

use crate::backend::Backend;
use crate::error::Error;
use crate::sandbox::{Sandbox, SandboxSpec};

/// See [`Sandbox::with`].
pub(crate) async fn with<T, E, F, Fut>(
    backend: impl Into<Backend>,
    spec: &SandboxSpec,
    f: F,
) -> std::result::Result<T, E>
where
    F: FnOnce(Sandbox) -> Fut,
    Fut: Future<Output = std::result::Result<T, E>>,
    E: From<Error>,
{
    let sandbox = Sandbox::create(backend, spec).await?;
    let inner = sandbox.clone();
    let outcome = AssertUnwindSafe(async move { f(inner).await })
        .catch_unwind()
        .await;
    let down = match sandbox
        .shutdown(crate::sandbox::ShutdownOptions::default())
        .await
    {
        Ok(_) | Err(Error::ContainerGone { .. }) => Ok(()),
        Err(e) => Err(e),
    };
    match outcome {
        Err(panic) => std::panic::resume_unwind(panic),
        Ok(Err(e)) => Err(e),
        Ok(Ok(v)) => down.map(|()| v).map_err(E::from),
    }
}
