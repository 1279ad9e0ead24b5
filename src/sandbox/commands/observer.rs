//! A hook on a sandbox handle that sees every command it runs, so a layer
//! above (the store's persistent-sandbox logs) can record runs without the
//! sandbox layer knowing where or how. The hook sits at the `run` level,
//! above how a command is executed. Sessions are watched the same way, one
//! watch per session, told what was sent and what came back.

use crate::event::StreamKind;
use crate::sandbox::Commands;

/// Told of each command a [`Sandbox`](crate::sandbox::Sandbox) handle runs (set by
/// [`Sandbox::observe`](crate::sandbox::Sandbox::observe)).
pub trait RunObserver: std::fmt::Debug + Send + Sync {
    /// `command` is about to run; the watch sees its output and end, or
    /// `None` to let this one pass unwatched.
    fn run_started(&self, command: &str) -> Option<Box<dyn RunWatch>>;

    /// A session was opened on the handle; the watch sees its dialogue and
    /// its close, or `None` (the default) to let it pass unwatched.
    fn session_opened(&self) -> Option<Box<dyn SessionWatch>> {
        None
    }
}

/// One watched command: its output as it arrives, then how it ended.
pub trait RunWatch: Send {
    /// Output as it arrives (what fits under the output cap).
    fn output(&mut self, kind: StreamKind, data: &[u8]);
    /// The command ended: its exit code (`None` when it never finished),
    /// whether it timed out, and the error that stopped it, if any.
    fn finished(self: Box<Self>, exit_code: Option<i64>, timed_out: bool, error: Option<&str>);
}

/// One watched session: what was sent to it, what came back, and its end.
pub trait SessionWatch: Send {
    /// `cmd` was sent to the shell.
    fn sent(&mut self, cmd: &str);
    /// Output came back: a command's result, or what a read returned.
    fn received(&mut self, data: &[u8]);
    /// The session was closed (or its last handle dropped); told once.
    fn closed(self: Box<Self>);
}

impl Commands<'_> {
    /// Start `command`'s exec, telling the observer (if any) first: the
    /// watch to feed its output, for runs that drive the exec themselves
    /// (streams, detached processes). A failed start is told to it too.
    pub(crate) async fn start_watched(
        self,
        command: &str,
        opts: &crate::sandbox::RunOptions,
        detached: bool,
    ) -> crate::error::Result<(crate::sandbox::commands::Started, Option<Box<dyn RunWatch>>)> {
        let watch = self
            .sb
            .observer
            .as_ref()
            .and_then(|o| o.run_started(command));
        match self.start_exec(command, opts, detached).await {
            Ok(started) => Ok((started, watch)),
            Err(e) => {
                if let Some(w) = watch {
                    w.finished(None, false, Some(&e.to_string()));
                }
                Err(e)
            }
        }
    }
}

/// Tell `watch` how the run it watched ended.
pub(crate) fn finish_watch(
    watch: Option<Box<dyn RunWatch>>,
    outcome: &crate::error::Result<crate::sandbox::commands::Outcome>,
) {
    if let Some(w) = watch {
        match outcome {
            Ok(o) => w.finished(Some(o.exit_code), o.timed_out, None),
            Err(e) => w.finished(None, false, Some(&e.to_string())),
        }
    }
}
