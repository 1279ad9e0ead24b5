//! Parking the carried sessions before a checkpoint: each host tells its
//! relay to let go (`pocketdock-agent session-park`), so no connection to a
//! process outside the checkpoint is open. Attached [`Session`](super::Session)s
//! connect again at their next input.

use std::time::Duration;

use super::Sessions;
use crate::error::{Error, Result};
use crate::sandbox::commands::{RunOptions, Timeout};

/// Each host lets go within 10 s; room for a few.
const PARK_TIMEOUT: Duration = Duration::from_mins(1);

impl Sessions<'_> {
    /// Park every carried session of the sandbox (root reaches every
    /// user's); nothing to do in a sandbox without the helper.
    pub(crate) async fn park(self) -> Result<()> {
        let Some(bin) = self.sb.helper().binary_in_sandbox().await else {
            return Ok(());
        };
        let opts = RunOptions {
            user: Some("0".into()),
            timeout: Timeout::After(PARK_TIMEOUT),
            ..RunOptions::default()
        };
        let r = self
            .sb
            .commands()
            .run(&format!("{bin} session-park"), &opts)
            .await?;
        if r.ok {
            return Ok(());
        }
        Err(Error::SessionClosed {
            name: self.sb.name.clone(),
            reason: format!(
                "its sessions did not let go for the checkpoint (exit {}): {}",
                r.exit_code,
                r.stderr.trim()
            ),
        })
    }
}
