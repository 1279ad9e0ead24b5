//! A fork where nothing can be committed (Kubernetes): each copy is made
//! like the original from its raw inspect, then the original's working
//! directories are copied into it, tar streams from one to the other.

use std::collections::HashSet;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http_body_util::{BodyExt, StreamBody};
use serde_json::Value;

use super::fork::{like_body, make_all, name_in_use, test_failure, Fork};
use super::recreate::start_like;
use crate::backend::ArchiveBody;
use crate::engine::transport::Body;
use crate::error::{Error, Result};
use crate::sandbox::{Sandbox, ShutdownOptions};

/// How many copies are made at once (each streams its files).
const AT_ONCE: usize = 4;

/// A tar block: a directory's entry is one header and no data.
const BLOCK: usize = 512;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The archive of a directory without the directory's own entry (its
/// first), so unpacking it into an existing one (a pod's `/tmp`, not the
/// user's) writes its files and never sets the directory's owner or times.
fn without_top_dir(body: ArchiveBody) -> Body {
    let stream = stream::once(async move {
        let mut body = body;
        let mut head = Vec::new();
        while head.len() < BLOCK {
            match body.frame().await {
                None => break,
                Some(Err(e)) => return stream::iter(vec![Err(e)]).left_stream(),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        head.extend_from_slice(&data);
                    }
                }
            }
        }
        // The type flag of a directory's header is '5'.
        if head.len() >= BLOCK && head[156] == b'5' {
            head.drain(..BLOCK);
        }
        stream::once(async move { Ok(Bytes::from(head)) })
            .chain(body.into_data_stream())
            .right_stream()
    })
    .flatten();
    BodyExt::boxed(StreamBody::new(stream.map(|r| {
        r.map(hyper::body::Frame::data)
            .map_err(|e| Box::new(e) as BoxError)
    })))
}

/// Fork by copying files (see [`crate::sandbox::Sandbox::fork`]): `raw` is the
/// original's raw inspect, `names` free and valid.
pub(super) async fn fork_by_copy(sb: &Sandbox, raw: &Value, names: &[String]) -> Result<Fork> {
    let dirs = dirs_to_copy(sb, raw).await;
    // The futures made first, as in `fork_named`: a closure of the
    // stream over `&String` would make this future not `Send`.
    let copies: Vec<_> = names
        .iter()
        .map(|name| copy_into_new(sb, raw, name, &dirs))
        .collect();
    let sandboxes = make_all(copies, AT_ONCE).await?;
    Ok(Fork {
        sandboxes,
        image: String::new(),
        processes_copied: false,
        refused: None,
    })
}

/// The directories a copy gets: the working directory (the inspect's,
/// else where a command starts) and `/tmp`, never `/` itself.
async fn dirs_to_copy(sb: &Sandbox, raw: &Value) -> Vec<String> {
    let mut work = raw["Config"]["WorkingDir"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if work.is_empty() {
        work = sb
            .commands()
            .housekeeping(vec!["pwd".into()], None)
            .await
            .map(|o| o.trim().to_string())
            .unwrap_or_default();
    }
    let mut seen = HashSet::new();
    [work, "/tmp".to_string()]
        .into_iter()
        .map(|d| d.trim_end_matches('/').to_string())
        .filter(|d| d.starts_with('/') && d.len() > 1 && seen.insert(d.clone()))
        .collect()
}

/// Make copy `name` like the original and copy `dirs` into it; on a
/// failure the copy is removed.
async fn copy_into_new(sb: &Sandbox, raw: &Value, name: &str, dirs: &[String]) -> Result<Sandbox> {
    test_failure(name)?;
    let copy = start_like(&sb.backend, name, like_body(raw, name))
        .await
        .map_err(|e| name_in_use(name, e))?;
    for dir in dirs {
        if let Err(e) = copy_dir(sb, &copy, dir).await {
            let _ = copy.shutdown(ShutdownOptions::DISCARD).await;
            return Err(e);
        }
    }
    Ok(copy)
}

/// Stream what `dir` holds here into `dir` in `copy`; nothing when it
/// does not exist here.
async fn copy_dir(sb: &Sandbox, copy: &Sandbox, dir: &str) -> Result<()> {
    let body = match sb.backend.get_archive(&sb.name, dir).await {
        Ok((stat, body)) if stat.is_dir() => body,
        Ok(_) | Err(Error::Api { status: 404, .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let parent = match dir.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((parent, _)) => parent,
    };
    // Its error names the copy's pod and what the image needs.
    sb.backend
        .put_archive(&copy.name, parent, without_top_dir(body), false)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, flag: u8) -> Vec<u8> {
        let mut h = vec![0u8; BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[156] = flag;
        h
    }

    async fn through(tar: Vec<u8>) -> Vec<u8> {
        let body: ArchiveBody = http_body_util::Full::new(Bytes::from(tar))
            .map_err(|never| match never {})
            .boxed();
        without_top_dir(body)
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec()
    }

    #[tokio::test]
    async fn a_directory_archive_loses_its_own_entry_only() {
        let file = header("tmp/a.txt", b'0');
        let tar = [header("tmp/", b'5'), file.clone(), vec![0; 2 * BLOCK]].concat();
        assert_eq!(through(tar).await, [file, vec![0; 2 * BLOCK]].concat());
    }

    #[tokio::test]
    async fn an_archive_not_starting_with_a_directory_is_unchanged() {
        let tar = [header("a.txt", b'0'), vec![0; 2 * BLOCK]].concat();
        assert_eq!(through(tar.clone()).await, tar);
        assert!(through(Vec::new()).await.is_empty());
    }
}
