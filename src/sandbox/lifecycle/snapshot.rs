//! A sandbox's filesystem saved as an image.

use std::collections::BTreeMap;

use crate::engine::split_image;
use crate::error::{Error, Result};
use crate::sandbox::{agent, labels, Sandbox};

/// [`Sandbox::snapshot`] with more labels on the image (the step
/// cache's key, say).
pub(crate) async fn snapshot_labelled(
    sb: &Sandbox,
    image: &str,
    extra: BTreeMap<String, String>,
) -> Result<String> {
    let (repo, tag) = split_image(image);
    let mut labels = BTreeMap::from([
        (labels::MANAGED.to_string(), "true".to_string()),
        (labels::SNAPSHOT_OF.to_string(), sb.name.clone()),
    ]);
    labels.extend(extra);
    let changes = image_command_changes(sb).await?;
    let paused = sb
        .backend
        .commit(&sb.name, repo, tag, &labels, &changes, true)
        .await;
    // Rootless Podman on cgroup v1 has no freezer: "can not pause
    // containers on rootless containers with cgroup V1".
    let rootless = || sb.backend.rootless();
    match paused {
        Err(Error::Api { message, .. }) if message.contains("pause") && rootless().await => {
            sb.backend
                .commit(&sb.name, repo, tag, &labels, &changes, false)
                .await
        }
        other => other,
    }
    .map_err(|e| crate::sandbox::gone_on_404(sb, e))
}

/// A snapshot runs as its image did, not with the helper as its first
/// process (which needs the helper's mounts): the image's own
/// entrypoint and command go back into the committed config.
pub(crate) async fn image_command_changes(sb: &Sandbox) -> Result<Vec<String>> {
    let config = sb.inspect().await?.config;
    Ok(agent::image_command_changes(
        config.entrypoint.as_deref(),
        config.cmd.as_deref(),
    ))
}
