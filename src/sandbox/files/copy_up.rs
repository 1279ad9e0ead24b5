//! On Docker a tmpfs hides what the image has at its mount point, where
//! Podman copies it in (`tmpcopyup`). Docker's archive API still reads the
//! layer beneath the mount, so that content is copied into the new tmpfs,
//! and an image's `/tmp/tests` is there on both engines.

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};

use crate::engine::transport::Body;
use crate::error::{Error, Result};
use crate::sandbox::Sandbox;

/// A tar block; an empty directory's archive is its own header, then zeros.
const BLOCK: usize = 512;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Sandbox {
    /// Copy what the image holds at each of `mounts` into the tmpfs there.
    pub(in crate::sandbox) async fn copy_up(&self, mounts: &[String]) -> Result<()> {
        for mount in mounts {
            let (stat, mut body) = match self.backend.get_archive(&self.name, mount).await {
                Ok(found) => found,
                Err(Error::Api { status: 404, .. }) => continue,
                Err(e) => return Err(e),
            };
            if !stat.is_dir() {
                continue;
            }
            // Read past the directory's own entry: stop if nothing follows.
            let mut head = Vec::new();
            let mut ended = false;
            while head.len() < 2 * BLOCK {
                match body.frame().await {
                    None => {
                        ended = true;
                        break;
                    }
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
            if ended && second.is_none_or(|b| b.iter().all(|&x| x == 0)) {
                continue;
            }
            let rest = body.into_data_stream();
            let chained = futures_util::StreamExt::chain(
                futures_util::stream::once(async move { Ok::<_, hyper::Error>(Bytes::from(head)) }),
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
