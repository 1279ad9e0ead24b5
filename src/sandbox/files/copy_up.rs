//! On Docker a tmpfs hides what the image has at its mount point, where
//! Podman copies it in (`tmpcopyup`). Docker's archive API still reads the
//! layer beneath the mount, so that content is copied into the new tmpfs,
//! and an image's `/tmp/tests` is there on both engines.
//!
//! Asking the archive API costs Docker tens of milliseconds, so an image
//! found to hold nothing at a mount point is remembered by its id (ids are
//! content digests: the answer never changes), in this process and in a
//! marker file beside the helper's directory, and is not asked again.

use super::Files;
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};

use crate::engine::transport::Body;
use crate::error::{Error, Result};

/// A tar block; an empty directory's archive is its own header, then zeros.
const BLOCK: usize = 512;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Files<'_> {
    /// Copy what image `image_id` holds at each of `mounts` into the tmpfs there.
    pub(in crate::sandbox) async fn copy_up(self, mounts: &[String], image_id: &str) -> Result<()> {
        let known = KnownEmpty::new(self.sb.backend.helper_mount().map(|h| h.dir), image_id);
        for mount in mounts {
            if known.is_empty(mount) {
                continue;
            }
            let (stat, mut body) = match self.sb.backend.get_archive(&self.sb.name, mount).await {
                Ok(found) => found,
                Err(Error::Api { status: 404, .. }) => {
                    known.remember(mount);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if !stat.is_dir() {
                known.remember(mount);
                continue;
            }
            // Read past the directory's own entry (a header, no data): a
            // zero block after it ends the archive, and the image has nothing there.
            let mut head = Vec::new();
            while head.len() < 2 * BLOCK {
                match body.frame().await {
                    None => break,
                    Some(frame) => {
                        let frame = frame.map_err(|e| Error::Protocol {
                            op: "copy the image's files into a tmpfs",
                            detail: e.to_string(),
                        })?;
                        if let Ok(data) = frame.into_data() {
                            head.extend_from_slice(&data);
                        }
                    }
                }
            }
            let second = head.get(BLOCK..2 * BLOCK);
            if second.is_none_or(|b| b.iter().all(|&x| x == 0)) {
                known.remember(mount);
                continue;
            }
            let rest = body.into_data_stream();
            let chained = futures_util::StreamExt::chain(
                futures_util::stream::once(
                    async move { Ok::<_, std::io::Error>(Bytes::from(head)) },
                ),
                rest,
            );
            let tar: Body = StreamBody::new(futures_util::StreamExt::map(chained, |r| {
                r.map(hyper::body::Frame::data)
                    .map_err(|e| Box::new(e) as BoxError)
            }))
            .boxed();
            let parent = super::split(mount).0.to_string();
            self.put_via_exec(&parent, tar).await?;
        }
        Ok(())
    }
}

/// Image mount points known to hold nothing.
struct KnownEmpty {
    image_id: String,
    /// Marker files' directory; `None` without a helper directory.
    dir: Option<std::path::PathBuf>,
}

static SEEN_EMPTY: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

impl KnownEmpty {
    fn new(helper_dir: Option<&std::path::Path>, image_id: &str) -> KnownEmpty {
        let dir = helper_dir
            .and_then(|d| d.parent())
            .map(|state| state.join("empty-mounts"));
        KnownEmpty {
            image_id: image_id.trim_start_matches("sha256:").to_string(),
            dir,
        }
    }

    /// One name per (image, mount): the id, then the mount's path with `/` as `_`.
    fn key(&self, mount: &str) -> String {
        format!("{}{}", self.image_id, mount.replace('/', "_"))
    }

    fn is_empty(&self, mount: &str) -> bool {
        if self.image_id.is_empty() {
            return false;
        }
        let key = self.key(mount);
        if SEEN_EMPTY.lock().is_ok_and(|s| s.contains(&key)) {
            return true;
        }
        self.dir.as_ref().is_some_and(|d| d.join(&key).exists())
    }

    fn remember(&self, mount: &str) {
        if self.image_id.is_empty() {
            return;
        }
        let key = self.key(mount);
        if let Ok(mut seen) = SEEN_EMPTY.lock() {
            if !seen.contains(&key) {
                seen.push(key.clone());
            }
        }
        // A lost marker only costs one more look.
        if let Some(d) = &self.dir {
            let _ = std::fs::create_dir_all(d).and_then(|()| std::fs::write(d.join(key), b""));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_mount_is_remembered_per_image_and_path() {
        let state = tempfile::tempdir().unwrap();
        let known = KnownEmpty {
            image_id: "abc123".into(),
            dir: Some(state.path().join("empty-mounts")),
        };
        assert!(!known.is_empty("/tmp"));
        known.remember("/tmp");
        assert!(known.is_empty("/tmp"));
        assert!(!known.is_empty("/home/sandbox"), "another mount point");
        assert!(state.path().join("empty-mounts/abc123_tmp").exists());
        let other = KnownEmpty {
            image_id: "def456".into(),
            dir: known.dir.clone(),
        };
        assert!(!other.is_empty("/tmp"), "another image");
        let unknown = KnownEmpty {
            image_id: String::new(),
            dir: known.dir.clone(),
        };
        unknown.remember("/tmp");
        assert!(!unknown.is_empty("/tmp"), "no id, no memory");
    }
}
