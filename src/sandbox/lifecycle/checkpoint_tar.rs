//! A copy's own checkpoint archive: Podman's export, streamed through with
//! its container config edited for the copy. N restores of one archive
//! would share the original's helper directory (a bind mount named in the
//! config), so each copy's archive names a directory of its own and labels
//! the copy as itself. It also gives the copy its name and an ID chosen
//! here, and a CRIU config file (`org.criu.config`, read by runc) that
//! maps the original's cgroup to the copy's: left to itself, CRIU puts
//! every copy's processes back into the original's cgroup, under its
//! memory limit, and they die with it.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::stream::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use serde_json::{json, Value};

use crate::engine::transport::Body;
use crate::sandbox::labels;

/// The archive's files that hold the container's config: libpod's
/// (labels, mounts) and the OCI spec the restore runs (mounts).
const CONFIGS: [&str; 2] = ["config.dump", "spec.dump"];

/// The spec annotation naming a CRIU config file for runc.
const CRIU_CONFIG: &str = "org.criu.config";

/// What one copy changes.
#[derive(Debug, Clone)]
pub(super) struct CopyEdit {
    /// The copy's name (its `pocketdock.instance` label).
    pub name: String,
    /// The original's helper directory and the copy's, on the host.
    pub dirs: Option<(String, String)>,
    /// The copy's container ID and the CRIU config file its restore reads.
    pub id: Option<(String, String)>,
}

/// Copy the archive `from` to `to`, its configs edited by `edit`.
pub(super) fn rewrite(from: impl Read, to: impl Write, edit: &CopyEdit) -> io::Result<()> {
    let mut archive = tar::Archive::new(from);
    let mut out = tar::Builder::new(to);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let mut header = entry.header().clone();
        let name = path.to_string_lossy();
        if CONFIGS.contains(&name.trim_start_matches("./")) {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes)?;
            let bytes = edit_config(&bytes, name.ends_with("config.dump"), edit);
            header.set_size(bytes.len() as u64);
            out.append_data(&mut header, &path, bytes.as_slice())?;
        } else {
            out.append_data(&mut header, &path, &mut entry)?;
        }
    }
    out.into_inner()?.flush()
}

/// One config file, edited; unchanged when it is not JSON.
fn edit_config(bytes: &[u8], libpod: bool, edit: &CopyEdit) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(bytes) else {
        return bytes.to_vec();
    };
    if let Some((old, new)) = &edit.dirs {
        replace_in_strings(&mut v, old, new);
    }
    if let Some((id, criu_config)) = &edit.id {
        if libpod {
            v["id"] = json!(id);
            v["name"] = json!(edit.name);
        } else if let Some(spec) = v.as_object_mut() {
            let notes = spec.entry("annotations").or_insert_with(|| json!({}));
            notes[CRIU_CONFIG] = json!(criu_config);
        }
    }
    if libpod {
        if let Some(l) = v.get_mut("labels").and_then(Value::as_object_mut) {
            for k in super::fork::NOT_COPIED {
                if l.contains_key(k) {
                    l.insert(k.into(), json!(""));
                }
            }
            l.insert(labels::INSTANCE.into(), json!(edit.name));
        }
    }
    serde_json::to_vec(&v).unwrap_or_else(|_| bytes.to_vec())
}

/// Every string in `v` with `old` (a path) replaced by `new`, where it is
/// the whole string or a path's start (`old/x`, `old:/in`).
fn replace_in_strings(v: &mut Value, old: &str, new: &str) {
    match v {
        Value::String(s) if s.starts_with(old) => {
            let rest = &s[old.len()..];
            if rest.is_empty() || rest.starts_with(['/', ':']) {
                *s = format!("{new}{rest}");
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| replace_in_strings(x, old, new)),
        Value::Object(o) => o.values_mut().for_each(|x| replace_in_strings(x, old, new)),
        _ => {}
    }
}

/// The archive at `export`, edited for one copy, as a request body (the
/// rewrite runs on a blocking thread as the engine reads).
pub(super) fn edited_body(export: PathBuf, edit: CopyEdit) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<io::Result<Bytes>>(16);
    tokio::task::spawn_blocking(move || {
        let sink = ChannelWriter(tx.clone());
        let done = std::fs::File::open(&export).and_then(|f| {
            rewrite(
                io::BufReader::with_capacity(1 << 20, f),
                io::BufWriter::with_capacity(1 << 20, sink),
                &edit,
            )
        });
        if let Err(e) = done {
            let _ = tx.blocking_send(Err(e));
        }
    });
    let chunks =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    BodyExt::boxed(StreamBody::new(chunks.map(|c| {
        c.map(hyper::body::Frame::data)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    })))
}

/// Bytes written become the body's chunks.
struct ChannelWriter(tokio::sync::mpsc::Sender<io::Result<Bytes>>);

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .blocking_send(Ok(Bytes::copy_from_slice(buf)))
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn files(tar: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut a = tar::Archive::new(tar);
        a.entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let mut d = Vec::new();
                e.read_to_end(&mut d).unwrap();
                (e.path().unwrap().display().to_string(), d)
            })
            .collect()
    }

    #[test]
    fn a_copy_gets_its_own_helper_directory_and_name_and_the_rest_is_kept() {
        let config = json!({
            "name": "orig",
            "labels": {"pocketdock.instance": "orig", "pocketdock.agent": "/h/aaaa",
                       "pocketdock.job": "j", "pocketdock.project": "p"},
            "spec": {"mounts": [{"source": "/h/aaaa", "destination": "/.pocketdock/run"},
                                {"source": "/h/aaaab", "destination": "/x"}]},
        });
        let spec = json!({"mounts": [{"source": "/h/aaaa/sub", "destination": "/y"}],
                          "annotations": {"a": "b"}});
        let pages = vec![7u8; 3000];
        let tar = archive(&[
            ("config.dump", config.to_string().as_bytes()),
            ("spec.dump", spec.to_string().as_bytes()),
            ("checkpoint/pages-1.img", &pages),
        ]);
        let edit = CopyEdit {
            name: "orig-fork-2".into(),
            dirs: Some(("/h/aaaa".into(), "/h/bbbbbbbb".into())),
            id: Some(("fedc9876".into(), "/h/criu/fedc9876.conf".into())),
        };
        let mut out = Vec::new();
        rewrite(tar.as_slice(), &mut out, &edit).unwrap();
        let got = files(&out);
        let c: Value = serde_json::from_slice(&got[0].1).unwrap();
        assert_eq!(c["labels"]["pocketdock.instance"], "orig-fork-2");
        assert_eq!(c["labels"]["pocketdock.agent"], "/h/bbbbbbbb");
        assert_eq!(c["labels"]["pocketdock.job"], "");
        assert_eq!(c["labels"]["pocketdock.project"], "p");
        assert_eq!(c["spec"]["mounts"][0]["source"], "/h/bbbbbbbb");
        assert_eq!(c["spec"]["mounts"][1]["source"], "/h/aaaab");
        let s: Value = serde_json::from_slice(&got[1].1).unwrap();
        assert_eq!(s["mounts"][0]["source"], "/h/bbbbbbbb/sub");
        assert_eq!(c["id"], "fedc9876");
        assert_eq!(c["name"], "orig-fork-2");
        assert_eq!(s["annotations"]["org.criu.config"], "/h/criu/fedc9876.conf");
        assert_eq!(s["annotations"]["a"], "b");
        assert_eq!(got[2], ("checkpoint/pages-1.img".to_string(), pages));
    }

    #[test]
    fn a_config_that_is_not_json_passes_unchanged() {
        let tar = archive(&[("config.dump", b"not json")]);
        let edit = CopyEdit {
            name: "c".into(),
            dirs: None,
            id: None,
        };
        let mut out = Vec::new();
        rewrite(tar.as_slice(), &mut out, &edit).unwrap();
        assert_eq!(files(&out)[0].1, b"not json");
    }
}
