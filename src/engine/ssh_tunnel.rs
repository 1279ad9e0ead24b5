//! `ssh://` engines: one OpenSSH forward of a local Unix socket to the
//! engine's socket on the other machine, for as long as the engine handle
//! lives; the Unix transport then goes through it. OpenSSH already knows
//! the user's keys, agent, known hosts and config, as `docker context` uses it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::endpoint::Endpoint;

/// How long the forward may take to appear (a login, a host key check).
const OPEN_TIMEOUT: Duration = Duration::from_secs(15);

/// A running `ssh -L` forward; killed and its socket removed on drop.
#[derive(Debug)]
pub struct Tunnel {
    child: tokio::process::Child,
    dir: PathBuf,
}

impl Tunnel {
    /// The local socket that reaches the engine.
    #[must_use]
    pub fn local(&self) -> PathBuf {
        self.dir.join("engine.sock")
    }

    /// Start the forward for `endpoint` and wait for its socket. The ssh
    /// program is `POCKETDOCK_SSH` (words split on spaces, e.g.
    /// `ssh -F /path/config`), else `ssh`.
    pub async fn open(endpoint: &Endpoint, ssh: Option<&str>) -> Result<Tunnel, String> {
        let Endpoint::Ssh {
            target,
            port,
            socket,
        } = endpoint
        else {
            return Err("not an ssh:// endpoint".into());
        };
        let dir = private_dir()?;
        let local = dir.join("engine.sock");
        let mut words = ssh.unwrap_or("ssh").split_whitespace();
        let mut cmd = tokio::process::Command::new(words.next().unwrap_or("ssh"));
        cmd.args(words).args([
            "-nNT",
            "-o",
            "ExitOnForwardFailure=yes",
            "-o",
            "BatchMode=yes",
            // A link that goes down ends the forward within 15 s (its
            // socket then reads end of file) instead of TCP's hours.
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
        ]);
        if let Some(p) = port {
            cmd.args(["-p", &p.to_string()]);
        }
        cmd.arg("-L")
            .arg(format!("{}:{}", local.display(), socket.display()))
            .arg("--")
            .arg(target)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = cmd.spawn().map_err(|e| {
            let _ = std::fs::remove_dir_all(&dir);
            format!("cannot start ssh ({e}); install OpenSSH's client")
        })?;
        let mut tunnel = Tunnel { child, dir };
        tunnel.wait_for(&local).await?;
        Ok(tunnel)
    }

    async fn wait_for(&mut self, local: &Path) -> Result<(), String> {
        let started = std::time::Instant::now();
        while started.elapsed() < OPEN_TIMEOUT {
            if local.exists() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err).await;
                }
                return Err(format!("ssh exited ({status}): {}", err.trim()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(format!(
            "ssh opened no forward within {}s",
            OPEN_TIMEOUT.as_secs()
        ))
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A directory only this user can enter: the forward is the engine.
fn private_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!(
        "pocketdock-ssh-{}-{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    Ok(dir)
}
