//! `pull`: copy a file or directory out of the sandbox, and account for
//! what arrived (size and SHA-256 of every file, for the record).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{ActionCtx, Attempt, Use};
use crate::error::Error;
use crate::event::Artifact;
use crate::job::step_error::StepError;

/// How much a pull with its own `dst` may copy into the record's
/// `artifacts/` when a hard link is not possible (another filesystem).
pub const ARTIFACT_COPY_LIMIT: u64 = 64 * 1024 * 1024;

/// Copy `src` (sandbox) to `dst` (host), or into the job record's
/// `artifacts/STEP/` without one; stops at cancellation. A pull with its own
/// `dst` also leaves a hard link (or, across filesystems, a copy up to
/// [`ARTIFACT_COPY_LIMIT`]) in `artifacts/STEP/`, so the record holds what
/// every pull brought back.
pub(crate) async fn pull(ctx: &ActionCtx<'_>, src: &str, dst: Option<&Path>) -> Attempt {
    let keep = crate::store::JobArtifact::step_dir(ctx.artifacts, ctx.step);
    let name = Path::new(src.trim_end_matches('/'))
        .file_name()
        .map_or_else(|| "root".into(), std::ffi::OsStr::to_os_string);
    let target = match dst {
        Some(dst) => {
            if let Err(e) = ctx.host_paths.check(dst, Use::PullDestination) {
                return Attempt::failed(StepError::HostPath(e));
            }
            dst.to_path_buf()
        }
        None => keep.join(&name),
    };
    let work = async {
        if dst.is_none() {
            tokio::fs::create_dir_all(&keep)
                .await
                .map_err(|e| Error::io(format!("create {}", keep.display()), e))?;
        }
        ctx.sandbox.pull(src, &target).await?;
        let found = artifacts(&target).await?;
        let note = match dst {
            Some(_) => keep_in_record(&target, &keep.join(&name), &found).await,
            None => None,
        };
        Ok((found, note))
    };
    let r = tokio::select! {
        r = work => r.map_err(|e| ctx.error(e)),
        () = ctx.cancel.cancelled() => Err(StepError::Cancelled),
    };
    match r {
        Ok((artifacts, note)) => {
            if let Some(note) = note {
                ctx.output(crate::event::StreamKind::Stderr, &note);
            }
            Attempt {
                artifacts,
                ..Attempt::default()
            }
        }
        Err(e) => Attempt::failed(e),
    }
}

/// Hard-link every file pulled to `dst` under `keep` (a copy when linking
/// fails and the whole is within [`ARTIFACT_COPY_LIMIT`]); a note when the
/// record does not get them. Never fails the step: `dst` has the files.
async fn keep_in_record(dst: &Path, keep: &Path, found: &[Artifact]) -> Option<String> {
    let dst = dst.to_path_buf();
    let keep = keep.to_path_buf();
    let total: u64 = found.iter().map(|a| a.size).sum();
    let files: Vec<PathBuf> = found.iter().map(|a| PathBuf::from(&a.path)).collect();
    tokio::task::spawn_blocking(move || {
        let place = |f: &Path| -> PathBuf {
            match f.strip_prefix(&dst) {
                Ok(rel) if !rel.as_os_str().is_empty() => keep.join(rel),
                _ => keep.clone(),
            }
        };
        for f in &files {
            let to = place(f);
            if let Some(parent) = to.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            let _ = std::fs::remove_file(&to);
            if std::fs::hard_link(f, &to).is_ok() {
                continue;
            }
            if total > ARTIFACT_COPY_LIMIT {
                return Some(format!(
                    "[pocketdock] {} not kept in the record's artifacts/: {} bytes, over the {} MiB copy limit (no hard link possible)\n",
                    dst.display(),
                    total,
                    ARTIFACT_COPY_LIMIT / (1024 * 1024)
                ));
            }
            let _ = std::fs::copy(f, &to);
        }
        None
    })
    .await
    .ok()
    .flatten()
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
