//! `pods/{name}/exec` as a WebSocket speaking `v5.channel.k8s.io` (and
//! `v4.channel.k8s.io`): a channel byte, then data. 0 is stdin, 1 stdout,
//! 2 stderr, 3 the status JSON with the exit code, 255 (v5) closes stdin.
//! The command is a real engine exec in the pod's container.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State as Extract};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use pocketdock::engine::ExecSpec;
use serde_json::json;

use super::{status, State};

const V5: &str = "v5.channel.k8s.io";
const V4: &str = "v4.channel.k8s.io";

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query's pairs, repeated keys kept.
fn pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// `GET .../pods/{name}/exec?command=..&stdin=..`, upgraded.
pub async fn exec(
    Extract(state): Extract<Arc<State>>,
    Path((ns, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let q = pairs(query.as_deref().unwrap_or(""));
    let command: Vec<String> = q
        .iter()
        .filter(|(k, _)| k == "command")
        .map(|(_, v)| v.clone())
        .collect();
    let flag = |key: &str| q.iter().any(|(k, v)| k == key && v == "true");
    let stdin = flag("stdin");
    let tty = flag("tty");
    let container = state
        .pods()
        .get(&(ns, name.clone()))
        .map(|p| p.container.clone());
    let Some(container) = container.filter(|c| !c.is_empty()) else {
        return status(404, "NotFound", &format!("pods \"{name}\" not found"));
    };
    if command.is_empty() {
        return status(
            400,
            "BadRequest",
            "you must specify at least one command for the container",
        );
    }
    let offered = headers
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let v5 = offered.contains(V5) && !state.v4_only.load(Ordering::SeqCst);
    if !v5 && !offered.contains(V4) {
        return status(400, "BadRequest", "no supported exec protocol offered");
    }
    ws.protocols([if v5 { V5 } else { V4 }])
        .on_upgrade(move |socket| run(state, socket, container, command, stdin, tty, v5))
        .into_response()
}

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut v = Vec::with_capacity(data.len() + 1);
    v.push(channel);
    v.extend_from_slice(data);
    Message::Binary(v.into())
}

/// The status channel's message for an exit code.
fn exit_status(code: i64) -> Vec<u8> {
    let v = if code == 0 {
        json!({"metadata": {}, "status": "Success"})
    } else {
        json!({"metadata": {}, "status": "Failure",
            "message": format!("command terminated with non-zero exit code: exit status {code}"),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}})
    };
    serde_json::to_vec(&v).unwrap_or_default()
}

async fn run(
    state: Arc<State>,
    socket: WebSocket,
    container: String,
    command: Vec<String>,
    stdin: bool,
    tty: bool,
    v5: bool,
) {
    let (mut tx, mut rx) = socket.split();
    let spec = ExecSpec {
        cmd: command,
        tty,
        attach_stdin: stdin,
        ..ExecSpec::default()
    };
    let engine = &state.engine;
    let id = match engine.exec_create(&container, &spec).await {
        Ok(id) => id,
        Err(e) => {
            let msg = json!({"metadata": {}, "status": "Failure", "message": e.to_string(), "reason": "InternalError"});
            let _ = tx
                .send(frame(3, &serde_json::to_vec(&msg).unwrap_or_default()))
                .await;
            let _ = tx.close().await;
            return;
        }
    };
    let (mut output, input) = if stdin {
        match engine.exec_start_attached(&id, tty).await {
            Ok((o, i)) => (o, Some(i)),
            Err(_) => return,
        }
    } else {
        match engine.exec_start(&id, tty).await {
            Ok(o) => (o, None),
            Err(_) => return,
        }
    };
    // The client's stdin, until it closes it (255 on v5) or goes.
    let feed = tokio::spawn(async move {
        let Some(mut input) = input else { return };
        while let Some(Ok(msg)) = rx.next().await {
            let Message::Binary(data) = msg else {
                if matches!(msg, Message::Close(_)) {
                    break;
                }
                continue;
            };
            match data.first() {
                Some(0) if input.write(&data[1..]).await.is_err() => break,
                Some(255) if v5 && data.get(1) == Some(&0) => break,
                _ => {}
            }
        }
        let _ = input.close().await;
    });
    let dropping = state.drop_exec.load(Ordering::SeqCst);
    loop {
        let mut frames = Vec::new();
        match output
            .next(&mut |kind, data| {
                let channel = match kind {
                    pocketdock::event::StreamKind::Stderr => 2,
                    _ => 1,
                };
                frames.push(frame(channel, data));
            })
            .await
        {
            Ok(true) => {
                for f in frames {
                    if tx.send(f).await.is_err() {
                        feed.abort();
                        return;
                    }
                }
            }
            _ => break,
        }
        if dropping {
            // Fault: the stream goes away mid-command, no status.
            feed.abort();
            return;
        }
    }
    feed.abort();
    // A command whose container went away (the pod deleted under it) has
    // no exit code: the kubelet's error instead.
    let status = match engine
        .exec_inspect(&id)
        .await
        .ok()
        .and_then(|i| i.exit_code)
    {
        Some(code) => exit_status(code),
        None => serde_json::to_vec(&json!({"metadata": {}, "status": "Failure",
            "message": "error executing command in container: container not found",
            "reason": "InternalError"}))
        .unwrap_or_default(),
    };
    let _ = tx.send(frame(3, &status)).await;
    let _ = tx.close().await;
}
