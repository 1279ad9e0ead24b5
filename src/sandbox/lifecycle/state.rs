//! Stopping, starting again, rebooting and ending a sandbox.

use crate::error::Result;
use crate::sandbox::{labels, mounts, Sandbox, Shutdown};

/// After a (re)start: the helper died with the container's processes.
pub(crate) async fn relaunch_helper(sb: &Sandbox) {
    if sb.helper().agent_dir().await.is_none() {
        sb.helper().agent_relay_restarted();
        return;
    }
    if sb.helper().agent_is_init() {
        sb.helper().agent_started();
    } else {
        let _ = sb.helper().agent_launch().await;
    }
}

/// See [`Sandbox::shutdown`].
pub(crate) async fn end(sb: &Sandbox, force: bool, remove: bool) -> Result<Shutdown> {
    let inspect = sb.inspect().await?;
    sb.commands().stop_background().await;
    let persist = inspect.label(labels::PERSIST) == Some("true");
    if persist && !remove {
        if force && inspect.state.running {
            sb.backend
                .kill_container(&sb.name, "KILL")
                .await
                .map_err(|e| crate::sandbox::gone_on_404(sb, e))?;
        } else {
            sb.stop().await?;
        }
        return Ok(Shutdown::Stopped);
    }
    // Nothing in a removed sandbox outlives it, so there is nothing to
    // wait for: its helper ends it, or the removal kills it.
    if inspect.state.running {
        end_for_removal(sb).await;
    }
    sb.backend
        .remove_container(&sb.name, true)
        .await
        .map_err(|e| crate::sandbox::gone_on_404(sb, e))?;
    sb.helper().agent_discard();
    if let Some(image) = inspect.label(labels::FORK_IMAGE) {
        super::fork::release_image(&sb.backend, image).await;
    }
    Ok(Shutdown::Removed)
}

/// Before a removal: end the sandbox through its helper, so that the
/// engine removes a stopped container rather than kill one. Docker is
/// then waited for until it has seen the stop, which its removal would
/// otherwise race with a kill (10-15 ms more); Podman's removal sees
/// it at once, and its wait polls every 250 ms.
pub(crate) async fn end_for_removal(sb: &Sandbox) {
    if !sb.helper().agent_end().await {
        return;
    }
    if sb.backend.kind() == crate::backend::BackendKind::Docker {
        let _ = sb
            .backend
            .wait_not_running(&sb.name, std::time::Duration::from_secs(2))
            .await;
    }
}

/// On Docker, a restart mounts every tmpfs afresh: empty, and root's.
/// Podman copies the image's files in itself, but gives a home to the
/// container's user, root when the helper runs as root.
pub(crate) async fn give_homes_again(sb: &Sandbox) -> Result<()> {
    let podman = sb.backend.runtime_fills_tmpfs();
    if podman && sb.helper().image_user().await.is_none() {
        return Ok(());
    }
    let inspect = sb.inspect().await?;
    let mounts: Vec<String> = inspect
        .host_config
        .tmpfs
        .unwrap_or_default()
        .into_keys()
        .collect();
    if !mounts.is_empty() && !podman {
        sb.files().copy_up(&mounts, &inspect.image).await?;
    }
    if inspect.host_config.readonly_rootfs {
        for home in mounts.iter().filter(|m| *m != mounts::TMP) {
            super::create::give_mount_to_user(sb, home).await?;
        }
    }
    Ok(())
}

/// Its tmpfs mount points (an inspect the first time).
pub(crate) async fn tmpfs_mounts(sb: &Sandbox) -> Result<Vec<String>> {
    if sb.tmpfs.get().is_none() {
        sb.inspect().await?;
    }
    Ok(sb.tmpfs.get().cloned().unwrap_or_default())
}

/// See [`Sandbox::reboot`].
pub(crate) async fn reboot(sb: &mut Sandbox, fresh: bool) -> Result<()> {
    sb.commands().stop_background().await;
    if !fresh {
        sb.backend
            .restart_container(&sb.name, 10)
            .await
            .map_err(|e| crate::sandbox::gone_on_404(sb, e))?;
        give_homes_again(sb).await?;
        relaunch_helper(sb).await;
        return Ok(());
    }
    let raw = sb
        .backend
        .inspect_container_raw(&sb.name)
        .await
        .map_err(|e| crate::sandbox::gone_on_404(sb, e))?;
    let body = super::create_body::recreate_body(&raw);
    sb.backend.remove_container(&sb.name, true).await?;
    let id = sb.backend.create_container_raw(&sb.name, &body).await?;
    if let Err(e) = sb.backend.start_container(&id).await {
        let _ = sb.backend.remove_container(&id, true).await;
        return Err(e);
    }
    if let Some(g) = &sb.guard {
        g.set_id(&id);
    }
    sb.id = id;
    give_homes_again(sb).await?;
    relaunch_helper(sb).await;
    Ok(())
}
