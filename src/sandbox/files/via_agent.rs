//! Push through the sandbox's helper: one request stats the destination and
//! its parents (one `stat`), a second extracts the tar with the image's
//! `tar`, as the sandbox's user. Each is a round trip on the helper's socket instead of
//! several engine execs as root (about 100 ms a push before), and the
//! files are the user's without a `chown`.
//!
//! One file into a directory that exists skips `tar`: the helper's `write`
//! takes the bytes alone.
//!
//! Anything this path cannot do (no helper, exec mode, a destination the
//! user may not write) falls back to the engine's path, which does it as
//! root; so the rules of `push.rs` hold either way. Running as the user
//! also keeps a symbolic link in the sandbox from taking the files
//! anywhere the user could not write anyway.

use super::Files;
use std::collections::HashMap;
use std::io::Write as _;

use pocketdock_agent::wire;

use futures_util::future::FutureExt;

use super::push::{now, pack, relative, Dest, Source};
use super::{join_error, via_exec::parse_stat, CopyReport};
use crate::engine::transport::{channel_body, full};
use crate::engine::PathStat;
use crate::error::Result;

/// What the helper's `write` made of a push.
enum Written {
    Done(CopyReport),
    /// The user may not create the file there: the engine's path, as root.
    Refused,
    /// Not tried, or failed midway (an older helper): the archive's path.
    Untried,
}

/// `stat`'s line for each path that exists: raw mode in hex, size, path.
const STAT_FORMAT: &str = "%f %s %n";

impl Files<'_> {
    /// Push `source` to `to` through the helper; `Ok(None)` when the
    /// engine's path must do it.
    pub(super) async fn upload_via_agent(
        self,
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
        if rel.components().count() == 1 {
            match self.write_via_agent(source, &target).await? {
                Written::Done(report) => return Ok(Some(report)),
                // An archive would be refused there too, after all its bytes.
                Written::Refused => return Ok(None),
                Written::Untried => {}
            }
        }
        let (writer, body) = channel_body();
        let source = source.clone();
        let packer = tokio::task::spawn_blocking(move || pack(source, &rel, writer));
        // `-p`: the archive's modes as they are; `-o`: owned by whoever
        // extracts (matters when the sandbox's user is root).
        let argv = ["tar", "-x", "-p", "-o", "-f", "-", "-C", &anchor]
            .map(String::from)
            .to_vec();
        // A helper lost mid-push leaves it to the engine's path too.
        let fed = self.sb.helper().agent_feed(argv, body).await.ok().flatten();
        let pack_result = packer.await.map_err(|e| join_error(&e))?;
        match fed {
            Some(f) if f.code == 0 => Ok(Some(pack_result?.0)),
            _ => Ok(None),
        }
    }

    /// One regular file (or bytes) into an existing directory: the bytes
    /// alone, written by the helper's `write` (no `tar`, half the time for
    /// a big file).
    async fn write_via_agent(self, source: &Source, target: &str) -> Result<Written> {
        use std::os::unix::fs::MetadataExt;
        let (mode, mtime) = match source {
            Source::Bytes(_) => (0o644, now()),
            Source::Path { path, .. } => match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_file() => (m.mode() & 0o7777, u64::try_from(m.mtime()).unwrap_or(0)),
                _ => return Ok(Written::Untried),
            },
        };
        let argv = vec![
            wire::BINARY_IN_SANDBOX.to_string(),
            "write".into(),
            target.to_string(),
            format!("{mode:o}"),
            mtime.to_string(),
        ];
        let (mut writer, body) = channel_body();
        let source = source.clone();
        let feeder = tokio::task::spawn_blocking(move || -> std::io::Result<u64> {
            let n = match source {
                Source::Bytes(data) => {
                    writer.write_all(&data)?;
                    data.len() as u64
                }
                Source::Path { path, .. } => {
                    std::io::copy(&mut std::fs::File::open(path)?, &mut writer)?
                }
            };
            writer.flush()?;
            Ok(n)
        });
        let fed = self.sb.helper().agent_feed(argv, body).await.ok().flatten();
        let bytes = feeder.await.map_err(|e| join_error(&e))?;
        Ok(match (fed, bytes) {
            (Some(f), Ok(bytes)) if f.code == 0 => Written::Done(CopyReport { files: 1, bytes }),
            (Some(f), _) if f.code == i64::from(wire::WRITE_REFUSED) => Written::Refused,
            _ => Written::Untried,
        })
    }

    /// What `stat` says of every path [`Dest::resolve`] may ask about: the
    /// destination, the name inside it, and each parent up to `/`, in one
    /// `stat` (it exits 1 when some are missing: those print no line).
    async fn stats_via_agent(self, to: &Dest<'_>) -> Option<HashMap<String, Option<PathStat>>> {
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
        let Ok(Some(fed)) = self.sb.helper().agent_feed(argv, full(Vec::new())).await else {
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
