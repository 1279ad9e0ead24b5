//! A sandbox made like another, from a create body taken from the other's
//! inspect ([`recreate_body`](crate::sandbox::recreate_body), edited by the caller):
//! a warm pool's refill, a fork's copies.

use crate::backend::Backend;
use crate::error::Result;
use crate::sandbox::{agent, labels, Sandbox};

/// Create and start container `name` from `body`, with a helper directory
/// of its own (the template's is the template's), and bring its helper up
/// as a create does. The handle is owned: its drop guard removes the
/// container. On failure nothing is left: no container, no directory.
pub(crate) async fn start_like(
    backend: &Backend,
    name: &str,
    mut body: serde_json::Value,
) -> Result<Sandbox> {
    let dir = agent::rebind(backend, &mut body);
    let discard = |dir: &Option<std::path::PathBuf>| {
        if let Some(d) = dir {
            agent::discard(d);
        }
    };
    let id = match backend.create_container_raw(name, &body).await {
        Ok(id) => id,
        Err(e) => {
            discard(&dir);
            return Err(e);
        }
    };
    if let Err(e) = backend.start_container(&id).await {
        let _ = backend.remove_container(&id, true).await;
        discard(&dir);
        return Err(e);
    }
    let sandbox = crate::sandbox::owned(backend, name, &id, dir.clone());
    if dir.is_none() {
        return Ok(sandbox);
    }
    let list = |key: &str| -> Option<Vec<String>> {
        body.get(key)
            .and_then(|e| serde_json::from_value(e.clone()).ok())
    };
    if !agent::is_init(list("Entrypoint").as_deref(), list("Cmd").as_deref()) {
        let _ = sandbox.helper().agent_launch().await;
        return Ok(sandbox);
    }
    sandbox.helper().agent_started();
    // Its tmpfs home is the image's user's, as a create gives it.
    if body.pointer(&format!("/Labels/{}", labels::USER)).is_some() {
        if let Err(e) = crate::sandbox::give_homes_again(&sandbox).await {
            sandbox.keep();
            let _ = backend.remove_container(&id, true).await;
            discard(&dir);
            return Err(e);
        }
    }
    Ok(sandbox)
}
