//! Recycling: one container serves several users in turn, reset to
//! pristine between them (`recycle: true` in a manifest).
//!
//! Pristine is what the container was before its first command: the root
//! filesystem is read-only, so only its tmpfs mounts (home, `/tmp`) and
//! `/dev/shm` can hold anything of a user; they are emptied and the image's
//! own files there put back. Every process is killed but PID 1, the helper
//! and the image's keeper (the processes that were there before the first
//! command, named by pid and start time). Environment is per command, and
//! kernels and sessions are processes, so nothing else carries over.
//!
//! The reset is one request to the in-sandbox helper, or, without one, one
//! exec of a shell script. Either proves its work (no process, entry or
//! listening socket left) or fails; a failed reset means the container is
//! discarded, never reused.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use pocketdock_agent::wire;

use crate::error::{Error, Result};
use crate::sandbox::Sandbox;

/// How long a reset may take before the container is given up.
const RESET_TIMEOUT: Duration = Duration::from_secs(10);
/// An image's files at a tmpfs mount point larger than this are not kept
/// to put back: such a sandbox is not recycled.
const BASELINE_MAX: usize = 16 << 20;
/// Shared memory: not a mount of the spec, but writable by every user.
const SHM: &str = "/dev/shm";

/// What a reset of one container must spare and put back, read before
/// its first command.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pristine {
    /// Directories emptied: the tmpfs mounts and `/dev/shm`.
    dirs: Vec<String>,
    /// `pid start` of the processes there before any command.
    keep: Vec<String>,
    /// The image's files at each tmpfs mount point, as a tar of the mount
    /// (`None`: nothing there), and whether any of them is root's.
    baseline: Vec<(String, Option<Bytes>, bool)>,
}

fn parent_of(path: &str) -> String {
    match path.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) | None => "/".to_string(),
        Some((parent, _)) => parent.to_string(),
    }
}

fn not_clean(why: &str) -> Error {
    Error::Protocol {
        op: "reset a sandbox to pristine",
        detail: why.to_string(),
    }
}

/// Every live process but this shell's own, as `pid start`.
const LIST_SCRIPT: &str = r#"for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" = $$ ] && continue
  read -r l < "$d/stat" 2>/dev/null || continue
  l=${l##*) }
  set -f; set -- $l; set +f
  [ "$1" = Z ] && continue
  echo "$p ${20}"
done"#;

/// The helper's reset, in shell: `$1` the spared `pid start` (commas
/// between), then the directories. Prints `clean` last on success.
const RESET_SCRIPT: &str = r#"keep=",$1,"; shift; me=$$
targets() {
  found=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = 1 ] || [ "$p" = "$me" ] && continue
    read -r l < "$d/stat" 2>/dev/null || continue
    l=${l##*) }
    set -f; set -- $l; set +f
    [ "$1" = Z ] || [ "$2" = "$me" ] && continue
    case $keep in *",$p ${20},"*) continue ;; esac
    found="$found $p"
  done
}
i=0
while targets; [ -n "$found" ]; do
  i=$((i + 1))
  [ $i -gt 20 ] && { echo "processes left:$found"; exit 1; }
  kill -STOP $found 2>/dev/null; kill -KILL $found 2>/dev/null
  sleep 0.02 2>/dev/null
done
for m in "$@"; do
  [ -d "$m" ] || continue
  rm -rf -- "$m"/* "$m"/.[!.]* "$m"/..?* 2>/dev/null
  for e in "$m"/* "$m"/.[!.]* "$m"/..?*; do
    if [ -e "$e" ] || [ -L "$e" ]; then echo "cannot empty $m"; exit 1; fi
  done
done
for f in /proc/net/tcp /proc/net/tcp6; do
  [ -r $f ] || continue
  while read -r a b c st rest; do
    [ "$st" = 0A ] && { echo "listening sockets left"; exit 1; }
  done < $f
done
for f in /proc/net/udp /proc/net/udp6; do
  [ -r $f ] || continue
  n=0; while read -r l; do n=$((n + 1)); done < $f
  [ $n -gt 1 ] && { echo "bound sockets left"; exit 1; }
done
echo clean"#;

/// Read what a reset needs, before any command runs in this sandbox.
pub(crate) async fn pristine(sb: &Sandbox) -> Result<Pristine> {
    let mounts = crate::sandbox::tmpfs_mounts(sb).await?;
    let mut baseline = Vec::with_capacity(mounts.len());
    for m in &mounts {
        let tar = baseline_of(sb, m).await?;
        let root = tar.is_some() && holds_root_files(sb, m).await;
        baseline.push((m.clone(), tar, root));
    }
    // A helper launched a moment ago is waited for: it is then one of
    // the processes spared.
    let _ = sb.helper().agent_info().await;
    let keep = process_listing(sb).await?;
    let mut dirs = mounts;
    dirs.push(SHM.to_string());
    Ok(Pristine {
        dirs,
        keep: keep.lines().map(str::to_string).collect(),
        baseline,
    })
}

/// Reset to `p`: `Ok` only when the container was proved clean and
/// its image's files were put back.
pub(crate) async fn reset_to(sb: &Sandbox, p: &Pristine) -> Result<()> {
    sb.commands().stop_background().await;
    let req = wire::Reset {
        dirs: p.dirs.clone(),
        keep: p.keep.clone(),
    };
    match reset_via_helper(sb, &req).await {
        Some(result) => result?,
        None => reset_via_exec(sb, &req).await?,
    }
    for (mount, tar, root) in &p.baseline {
        if let Some(tar) = tar {
            put_back(sb, &parent_of(mount), tar, *root).await?;
        }
    }
    Ok(())
}

/// Extract `tar` into `parent`: as one command (through the helper,
/// no engine exec) when nothing in it is root's, else as root.
async fn put_back(sb: &Sandbox, parent: &str, tar: &Bytes, root: bool) -> Result<()> {
    if !root {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(tar);
        let cmd = format!("printf %s '{b64}' | base64 -d | tar -x -f - -C '{parent}'");
        let opts = crate::sandbox::RunOptions {
            timeout: crate::sandbox::Timeout::After(RESET_TIMEOUT),
            ..crate::sandbox::RunOptions::default()
        };
        if sb.run(&cmd, &opts).await.is_ok_and(|r| r.ok) {
            return Ok(());
        }
    }
    sb.files()
        .put_via_exec(parent, crate::engine::transport::full(tar.clone()))
        .await
}

/// Whether anything at `mount`, itself included, is root's, as the
/// sandbox sees it. The archive's owners cannot say: Podman's gives
/// root for files that are the user's. Unknown counts as root's.
async fn holds_root_files(sb: &Sandbox, mount: &str) -> bool {
    let opts = crate::sandbox::RunOptions {
        user: Some("0".into()),
        timeout: crate::sandbox::Timeout::After(RESET_TIMEOUT),
        env: vec![("PD_MOUNT".into(), mount.into())],
        ..crate::sandbox::RunOptions::default()
    };
    let cmd = r#"command -v find > /dev/null && find "$PD_MOUNT" -xdev -user 0 | head -n 1"#;
    match sb.run(cmd, &opts).await {
        Ok(r) if r.ok => !r.stdout.trim().is_empty(),
        _ => true,
    }
}

/// `None` when there is no helper to ask (or it does not know the
/// request): the engine's exec does it then.
async fn reset_via_helper(sb: &Sandbox, req: &wire::Reset) -> Option<Result<()>> {
    let opened = sb.helper().agent_open().await?;
    let ask = async {
        let mut conn = opened?;
        conn.send(wire::tag::RESET, &req.encode()).await?;
        conn.next().await
    };
    match tokio::time::timeout(RESET_TIMEOUT, ask).await {
        Ok(Ok(Some((wire::tag::ACK, _)))) => Some(Ok(())),
        Ok(Ok(Some((wire::tag::FALLBACK, why)))) => {
            Some(Err(not_clean(&String::from_utf8_lossy(&why))))
        }
        Err(_) => Some(Err(not_clean("the helper did not answer in time"))),
        Ok(Ok(_) | Err(_)) => None,
    }
}

async fn reset_via_exec(sb: &Sandbox, req: &wire::Reset) -> Result<()> {
    let mut argv = vec![
        "sh".to_string(),
        "-c".to_string(),
        RESET_SCRIPT.to_string(),
        "sh".to_string(),
        req.keep.join(","),
    ];
    argv.extend(req.dirs.iter().cloned());
    let out = sb.commands().housekeeping(argv, Some("0")).await?;
    if out.lines().last() == Some("clean") {
        Ok(())
    } else {
        Err(not_clean(out.trim()))
    }
}

/// `pid start` lines of the container's processes.
async fn process_listing(sb: &Sandbox) -> Result<String> {
    if let Ok(body) = sb
        .helper()
        .agent_ask(wire::tag::PROCS, &[], RESET_TIMEOUT)
        .await
    {
        return Ok(String::from_utf8_lossy(&body).into_owned());
    }
    let argv = ["sh", "-c", LIST_SCRIPT].map(str::to_string).to_vec();
    sb.commands().housekeeping(argv, Some("0")).await
}

/// The tar of what `mount` holds now, `None` when it is empty.
async fn baseline_of(sb: &Sandbox, mount: &str) -> Result<Option<Bytes>> {
    let (_, body) = match sb.backend().get_archive(sb.name(), mount).await {
        Ok(found) => found,
        Err(Error::Api { status: 404, .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let limited = http_body_util::Limited::new(body, BASELINE_MAX);
    let tar = limited
        .collect()
        .await
        .map_err(|e| not_clean(&format!("the image's files at {mount}: {e}")))?
        .to_bytes();
    // The directory's own header, then zeros: nothing to put back.
    let empty = tar.get(512..1024).is_none_or(|b| b.iter().all(|&x| x == 0));
    Ok((!empty).then_some(tar))
}

#[cfg(test)]
mod tests {
    use super::parent_of;

    #[test]
    fn parents_of_mount_points() {
        assert_eq!(parent_of("/tmp"), "/");
        assert_eq!(parent_of("/home/sandbox"), "/home");
        assert_eq!(parent_of("/home/sandbox/"), "/home");
    }
}
