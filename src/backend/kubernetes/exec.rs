//! Commands over the exec WebSocket, fitted to the engine's three calls:
//! create records the spec under a generated id, start runs it, inspect
//! reads the exit status it ended with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{AttachParams, AttachedProcess};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::error::from_kube;
use super::pod::CONTAINER;
use super::{lost, Kubernetes};
use crate::engine::{ExecInput, ExecInspect, ExecOutput, ExecSpec};
use crate::error::{Error, Result};
use crate::event::StreamKind;

/// How long a command runs before its pod is watched.
const WATCH_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// Commands kept before finished ones are dropped.
const KEPT: usize = 1024;
/// How long a finished command's status is kept for a caller that has not
/// read it yet: the run that started it reads it as soon as its output
/// ends, however many other commands finish meanwhile.
const UNREAD_KEPT: std::time::Duration = std::time::Duration::from_mins(1);

/// The commands of one backend, by id.
#[derive(Debug, Clone, Default)]
pub(in crate::backend) struct Execs(Arc<Mutex<HashMap<String, Entry>>>);

#[derive(Debug)]
struct Entry {
    pod: String,
    spec: ExecSpec,
    started: bool,
    running: bool,
    exit_code: Option<i64>,
    /// When it finished; `None` while it has not.
    finished: Option<std::time::Instant>,
    /// Its status was read once it had finished.
    read: bool,
}

impl Entry {
    /// Whether a full table keeps it: not started, running, or finished
    /// a moment ago with its status not read yet.
    fn kept(&self, now: std::time::Instant) -> bool {
        !self.started
            || self.running
            || (!self.read
                && self
                    .finished
                    .is_none_or(|t| now.duration_since(t) < UNREAD_KEPT))
    }
}

impl Execs {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Entry>) -> T) -> T {
        // A poisoned lock only means a panic elsewhere; the map is still whole.
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut map)
    }

    /// Record a new command, dropping what a full table need not keep.
    fn insert(&self, id: &str, pod: &str, spec: &ExecSpec) {
        self.with(|m| {
            if m.len() >= KEPT {
                let now = std::time::Instant::now();
                m.retain(|_, e| e.kept(now));
            }
            m.insert(
                id.to_string(),
                Entry {
                    pod: pod.to_string(),
                    spec: spec.clone(),
                    started: false,
                    running: false,
                    exit_code: None,
                    finished: None,
                    read: false,
                },
            );
        });
    }

    fn finish(&self, id: &str, exit_code: Option<i64>) {
        self.with(|m| {
            if let Some(e) = m.get_mut(id) {
                e.running = false;
                e.exit_code = exit_code;
                e.finished = Some(std::time::Instant::now());
            }
        });
    }
}

fn unknown(id: &str) -> Error {
    Error::Api {
        op: "start exec",
        status: 404,
        message: format!("Kubernetes: no such exec instance {id}"),
    }
}

/// Whether `user` names root, which pocketdock's own housekeeping asks
/// for: it runs as the pod's user (root in most images) rather than fail.
fn is_root(user: &str) -> bool {
    let name = user.split_once(':').map_or(user, |(u, _)| u);
    matches!(name, "" | "0" | "root")
}

/// The argv that gives `spec`'s command its environment and directory
/// (the exec API has neither).
fn argv(spec: &ExecSpec) -> Vec<String> {
    let mut argv = Vec::new();
    if let Some(dir) = &spec.working_dir {
        argv.extend(["sh", "-c", r#"cd "$0" && exec "$@""#].map(String::from));
        argv.push(dir.clone());
    }
    if !spec.env.is_empty() {
        argv.push("env".into());
        argv.extend(spec.env.iter().cloned());
    }
    argv.extend(spec.cmd.iter().cloned());
    argv
}

/// A stream that ended without an exit code, with what its status said.
fn no_status(status: Option<Status>) -> Error {
    let why = status.and_then(|s| s.message).unwrap_or_else(|| {
        "the exec stream ended without an exit status (the connection dropped)".into()
    });
    Error::Kubernetes {
        op: "run a command",
        detail: format!("{why}\nhint: `kubectl get pod` shows the pod's state"),
    }
}

/// The exit code a status channel's message carries.
fn exit_code(status: &Status) -> Option<i64> {
    if status.status.as_deref() == Some("Success") {
        return Some(0);
    }
    status
        .details
        .as_ref()?
        .causes
        .as_ref()?
        .iter()
        .find(|c| c.reason.as_deref() == Some("ExitCode"))
        .and_then(|c| c.message.as_deref()?.parse().ok())
}

impl Kubernetes {
    /// Record a command to run in `pod`; its id.
    pub(in crate::backend) fn exec_create(&self, pod: &str, spec: &ExecSpec) -> String {
        let id = format!("k8s-exec-{:016x}", fastrand::u64(..));
        self.execs.insert(&id, pod, spec);
        id
    }

    /// Run command `id`: its output, and its stdin with `stdin`.
    pub(in crate::backend) async fn exec_run(
        &self,
        id: &str,
        tty: bool,
        stdin: bool,
    ) -> Result<(ExecOutput, Option<ExecInput>)> {
        let (pod, spec) = self
            .execs
            .with(|m| {
                let e = m.get_mut(id)?;
                e.started = true;
                e.running = true;
                Some((e.pod.clone(), e.spec.clone()))
            })
            .ok_or_else(|| unknown(id))?;
        if let Some(user) = spec.user.as_deref().filter(|u| !is_root(u)) {
            self.execs.finish(id, None);
            return Err(Error::Kubernetes {
                op: "run a command as another user",
                detail: format!(
                    "the exec API cannot choose a user: the command would run as the pod's \
                     user, not `{user}`, and the in-sandbox helper, which can, did not start in \
                     this pod (it needs a writable root and `tar`)\nhint: drop `user` from the \
                     command, or let the sandbox's root be writable"
                ),
            });
        }
        let tty = tty || spec.tty;
        let params = AttachParams::default()
            .container(CONTAINER)
            .stdin(stdin)
            .stdout(true)
            .stderr(!tty)
            .tty(tty);
        let mut process = match self.pods().exec(&pod, argv(&spec), &params).await {
            Ok(p) => p,
            Err(e) => {
                self.execs.finish(id, None);
                return Err(from_kube("start exec", e));
            }
        };
        let input = process.stdin().map(|mut writer| {
            let (tx, mut rx) = mpsc::channel::<Bytes>(16);
            tokio::spawn(async move {
                while let Some(data) = rx.recv().await {
                    if writer.write_all(&data).await.is_err() {
                        break;
                    }
                }
                // Dropping the writer closes stdin (channel 255 on v5).
                let _ = writer.shutdown().await;
            });
            ExecInput::from_channel(tx)
        });
        Ok((self.pump(id, pod, process), input))
    }

    /// Read the output of `process` into frames, then record its status.
    /// A pod lost meanwhile ends it with why (the stream may never close).
    fn pump(&self, id: &str, pod: String, mut process: AttachedProcess) -> ExecOutput {
        let (tx, rx) = mpsc::channel(16);
        let stdout = process.stdout();
        let stderr = process.stderr();
        let status = process.take_status();
        let execs = self.execs.clone();
        let backend = self.clone();
        let id = id.to_string();
        tokio::spawn(async move {
            let finished = async {
                tokio::join!(
                    forward(stdout, StreamKind::Stdout, &tx),
                    forward(stderr, StreamKind::Stderr, &tx)
                );
                match status {
                    Some(s) => s.await,
                    None => None,
                }
            };
            let status = tokio::select! {
                status = finished => status,
                why = async {
                    // Most commands end sooner: no watch for them. The watch
                    // reads the pod first, so an earlier loss is still seen.
                    tokio::time::sleep(WATCH_AFTER).await;
                    backend.lost(&pod).await
                } => {
                    execs.finish(&id, None);
                    let _ = tx.send(Err(lost::lost(&pod, why))).await;
                    return;
                }
            };
            let code = status.as_ref().and_then(exit_code);
            // No status, or a kill: the pod may have gone first.
            let gone = match code {
                Some(c) if c < 128 => None,
                _ => backend.loss_now(&pod).await,
            };
            execs.finish(&id, code.filter(|_| gone.is_none()));
            if let Some(why) = gone {
                let _ = tx.send(Err(lost::lost(&pod, why))).await;
            } else if code.is_none() {
                let _ = tx.send(Err(no_status(status))).await;
            }
            drop(process);
        });
        ExecOutput::from_frames(rx)
    }

    /// Run command `id` with nobody reading its output.
    pub(in crate::backend) async fn exec_run_detached(&self, id: &str) -> Result<()> {
        let (mut output, _) = self.exec_run(id, false, false).await?;
        tokio::spawn(async move { while let Ok(true) = output.next(&mut |_, _| {}).await {} });
        Ok(())
    }

    /// Command `id`'s state.
    pub(in crate::backend) fn exec_state(&self, id: &str) -> Result<ExecInspect> {
        self.execs
            .with(|m| {
                m.get_mut(id).map(|e| {
                    e.read |= e.started && !e.running;
                    ExecInspect {
                        running: e.running,
                        exit_code: e.exit_code,
                        pid: 0,
                    }
                })
            })
            .ok_or_else(|| unknown(id))
    }
}

/// Copy `reader` into `tx` as frames of `kind`; once nobody reads, drain
/// it anyway so the command is not held up.
async fn forward(
    reader: Option<impl AsyncRead + Unpin>,
    kind: StreamKind,
    tx: &mpsc::Sender<Result<(StreamKind, Bytes)>>,
) {
    let Some(mut reader) = reader else {
        return;
    };
    let mut buf = vec![0u8; 32 * 1024];
    let mut reading = true;
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if reading
            && tx
                .send(Ok((kind, Bytes::copy_from_slice(&buf[..n]))))
                .await
                .is_err()
        {
            reading = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_keeps_a_finished_status_nobody_has_read() {
        let execs = Execs::default();
        let spec = ExecSpec::default();
        let start = |id: &str| {
            execs.with(|m| {
                let e = m.get_mut(id).unwrap();
                e.started = true;
                e.running = true;
            });
        };
        // One command finishes; its run has not read its status yet.
        execs.insert("pending", "pod", &spec);
        start("pending");
        execs.finish("pending", Some(3));
        // Many others start, finish and are read, filling the table.
        for i in 0..KEPT + 10 {
            let id = format!("done-{i}");
            execs.insert(&id, "pod", &spec);
            start(&id);
            execs.finish(&id, Some(0));
            execs.with(|m| m.get_mut(&id).unwrap().read = true);
        }
        let held = execs.with(|m| m.len());
        assert!(held <= KEPT, "the table is bounded: {held}");
        let status = execs.with(|m| m.get("pending").map(|e| e.exit_code));
        assert_eq!(status, Some(Some(3)), "the unread status was dropped");
        // Once read, or once old, it may go.
        let now = std::time::Instant::now();
        execs.with(|m| {
            let e = m.get_mut("pending").unwrap();
            assert!(e.kept(now));
            e.finished = Some(now);
            assert!(!e.kept(now + UNREAD_KEPT));
            e.read = true;
            assert!(!e.kept(now));
        });
    }

    #[test]
    fn directory_and_environment_wrap_the_command() {
        let spec = ExecSpec {
            cmd: vec!["pwd".into()],
            env: vec!["A=1".into()],
            working_dir: Some("/tmp".into()),
            ..ExecSpec::default()
        };
        assert_eq!(
            argv(&spec),
            [
                "sh",
                "-c",
                r#"cd "$0" && exec "$@""#,
                "/tmp",
                "env",
                "A=1",
                "pwd"
            ]
        );
    }

    #[test]
    fn only_root_passes_as_a_user() {
        assert!(is_root("0") && is_root("root:root") && is_root(""));
        assert!(!is_root("sandbox") && !is_root("1000:1000"));
    }

    #[test]
    fn the_status_channel_gives_the_exit_code() {
        let ok: Status = serde_json::from_value(serde_json::json!({"status": "Success"})).unwrap();
        assert_eq!(exit_code(&ok), Some(0));
        let failed: Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}
        }))
        .unwrap();
        assert_eq!(exit_code(&failed), Some(3));
    }
}
