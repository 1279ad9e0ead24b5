//! `pull`: copy a file or directory out of the sandbox, and account for
//! what arrived (size and SHA-256 of every file, for the record).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{ActionCtx, Attempt, Use};
use crate::error::Error;
use crate::event::Artifact;
use crate::run::step_error::StepError;

/// Copy `src` (sandbox) to `dst` (host); stops at cancellation.
pub(super) async fn pull(ctx: &ActionCtx<'_>, src: &str, dst: &Path) -> Attempt {
    if let Err(e) = ctx.host_paths.check(dst, Use::PullDestination) {
        return Attempt::failed(StepError::HostPath(e));
    }
    let work = async {
        ctx.sandbox.pull(src, dst).await?;
        artifacts(dst).await
    };
    let r = tokio::select! {
        r = work => r.map_err(|e| ctx.error(e)),
        () = ctx.cancel.cancelled() => Err(StepError::Cancelled),
    };
    match r {
        Ok(artifacts) => Attempt {
            artifacts,
            ..Attempt::default()
        },
        Err(e) => Attempt::failed(e),
    }
}

/// Size and SHA-256 of every file at `dst` (a file, or a directory's files).
async fn artifacts(dst: &Path) -> Result<Vec<Artifact>, Error> {
    let dst = dst.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let mut stack: Vec<PathBuf> = vec![dst];
        while let Some(p) = stack.pop() {
            let read = |e| Error::io(format!("read {}", p.display()), e);
            let meta = std::fs::symlink_metadata(&p).map_err(read)?;
            if meta.is_dir() {
                let mut children: Vec<PathBuf> = std::fs::read_dir(&p)
                    .map_err(read)?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .collect();
                children.sort();
                stack.extend(children.into_iter().rev());
            } else if meta.is_file() {
                let mut hasher = Sha256::new();
                let mut f = std::fs::File::open(&p).map_err(read)?;
                std::io::copy(&mut f, &mut hasher).map_err(read)?;
                out.push(Artifact {
                    path: p.display().to_string(),
                    size: meta.len(),
                    sha256: format!("{:x}", hasher.finalize()),
                });
            }
        }
        Ok(out)
    })
    .await
    .map_err(|e| Error::Protocol {
        op: "hash artifacts",
        detail: e.to_string(),
    })?
}

#[cfg(test)]
mod tests {
    use super::artifacts;

    #[tokio::test]
    async fn artifacts_are_every_file_in_path_order_with_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("b.txt"), "b").unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "").unwrap();
        let got = artifacts(dir.path()).await.unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|a| {
                a.path
                    .strip_prefix(&*dir.path().to_string_lossy())
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["/b.txt", "/sub/a.txt"]);
        assert_eq!(got[0].size, 1);
        assert_eq!(
            got[1].sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
