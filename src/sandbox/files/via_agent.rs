//! Push through the sandbox's helper: one request stats the destination and
//! its parents (one `stat`), a second extracts the tar with the image's
//! `tar`, as the sandbox's user. Each is a round trip on the helper's socket instead of
//! several engine execs as root (about 100 ms a push before), and the
//! files are the user's without a `chown`.
//!
//! Anything this path cannot do (no helper, exec mode, a destination the
//! user may not write) falls back to the engine's path, which does it as
//! root; so the rules of `push.rs` hold either way. Running as the user
//! also keeps a symbolic link in the sandbox from taking the files
//! anywhere the user could not write anyway.

use std::collections::HashMap;

use futures_util::future::FutureExt;

use super::push::{pack, relative, Dest, Source};
use super::{join_error, via_exec::parse_stat, CopyReport};
use crate::engine::transport::{channel_body, full};
use crate::engine::PathStat;
use crate::error::Result;
use crate::sandbox::Sandbox;

/// `stat`'s line for each path that exists: raw mode in hex, size, path.
const STAT_FORMAT: &str = "%f %s %n";

impl Sandbox {
    /// Push `source` to `to` through the helper; `Ok(None)` when the
    /// engine's path must do it.
    pub(super) async fn upload_via_agent(
        &self,
        source: &Source,
        to: &Dest<'_>,
    ) -> Result<Option<CopyReport>> {
        let Some(stats) = self.stats_via_agent(to).await else {
            return Ok(None);
        };
        let stat = |p: String| std::future::ready(Ok(stats.get(&p).cloned().flatten())).boxed();
        let Some((target, anchor)) = to.resolve(stat).await? else {
            return Ok(None);
        };
        let rel = relative(&target, &anchor);
        let (writer, body) = channel_body();
        let source = source.clone();
        let packer = tokio::task::spawn_blocking(move || pack(source, &rel, writer));
        // `-p`: the archive's modes as they are; `-o`: owned by whoever
        // extracts (matters when the sandbox's user is root).
        let argv = ["tar", "-x", "-p", "-o", "-f", "-", "-C", &anchor]
            .map(String::from)
            .to_vec();
        // A helper lost mid-push leaves it to the engine's path too.
        let fed = self.agent_feed(argv, body).await.ok().flatten();
        let pack_result = packer.await.map_err(|e| join_error(&e))?;
        match fed {
            Some(f) if f.code == 0 => Ok(Some(pack_result?.0)),
            _ => Ok(None),
        }
    }

    /// What `stat` says of every path [`Dest::resolve`] may ask about: the
    /// destination, the name inside it, and each parent up to `/`, in one
    /// `stat` (it exits 1 when some are missing: those print no line).
    async fn stats_via_agent(&self, to: &Dest<'_>) -> Option<HashMap<String, Option<PathStat>>> {
        if to.path.contains('\n') || to.name.contains('\n') {
            return None;
        }
        let mut paths = vec![to.path.to_string(), super::join(to.path, to.name)];
        let mut p = to.path;
        while p != "/" {
            p = super::split(p).0;
            paths.push(p.to_string());
        }
        let mut argv = ["stat", "-c", STAT_FORMAT, "--"].map(String::from).to_vec();
        argv.extend(paths.iter().cloned());
        let Ok(Some(fed)) = self.agent_feed(argv, full(Vec::new())).await else {
            return None;
        };
        let text = String::from_utf8_lossy(&fed.stdout);
        let mut found: HashMap<&str, &str> = HashMap::new();
        for line in text.lines() {
            let mut f = line.splitn(3, ' ');
            if let (Some(mode), Some(size), Some(path)) = (f.next(), f.next(), f.next()) {
                found.insert(path, &line[..mode.len() + 1 + size.len()]);
            }
        }
        // `/` always exists: without it, `stat` did not run as expected.
        found.get("/")?;
        let stats = paths
            .iter()
            .map(|p| {
                (
                    p.clone(),
                    found.get(p.as_str()).and_then(|l| parse_stat(l, p)),
                )
            })
            .collect();
        Some(stats)
    }
}
