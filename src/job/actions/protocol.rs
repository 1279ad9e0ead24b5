//! `protocol: ndjson`: a command that talks to the runner on its stdout,
//! one JSON object a line, as a worker does to its orchestrator.
//!
//! A line is a message when it is a JSON object whose `type` is one of
//! `progress-update`, `completion` or `error`; every other line (text,
//! other JSON, a `task-request` echoed back) stays the step's output.
//! Output arrives in pieces cut anywhere, so lines are put back together
//! first; a line longer than [`MAX_LINE`] is output, never a message.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::ActionCtx;
use crate::event::{EventKind, StreamKind};

/// The longest line read as a message; longer ones pass as output.
pub const MAX_LINE: usize = 1 << 20;

/// One message a command sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `progress-update`: its `status` and `message` (when strings) and
    /// its other fields.
    Progress {
        /// The line's `status`.
        status: Option<String>,
        /// The line's `message`.
        message: Option<String>,
        /// Every other field but `type`, an object.
        data: Value,
    },
    /// `completion`: the fields of its `result` object (of the line itself,
    /// `type` left out, when it has no `result` object), as the step's
    /// outputs: strings as they are, other values as JSON.
    Completion(IndexMap<String, String>),
    /// `error`: why the command failed, from its `message` (or `error`).
    Error(String),
}

/// A piece of what the command printed on stdout, read as the protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Output (whole lines, or the unended last one at the end).
    Output(String),
    /// A message.
    Message(Message),
}

/// `line` (without its newline) as a message, if it is one.
#[must_use]
pub fn parse_line(line: &str) -> Option<Message> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    let kind = fields.get("type").and_then(Value::as_str)?.to_string();
    fields.remove("type");
    match kind.as_str() {
        "progress-update" => {
            let status = take_string(&mut fields, "status");
            let message = take_string(&mut fields, "message");
            Some(Message::Progress {
                status,
                message,
                data: Value::Object(fields),
            })
        }
        "completion" => {
            let result = match fields.remove("result") {
                Some(Value::Object(result)) => result,
                Some(other) => {
                    fields.insert("result".into(), other);
                    fields
                }
                None => fields,
            };
            Some(Message::Completion(
                result.into_iter().map(|(k, v)| (k, as_output(v))).collect(),
            ))
        }
        "error" => Some(Message::Error(error_words(fields))),
        _ => None,
    }
}

/// The field `key` taken out of `fields` when it is a string (left in
/// otherwise, so nothing the command sent is lost).
fn take_string(fields: &mut Map<String, Value>, key: &str) -> Option<String> {
    if !fields.get(key).is_some_and(Value::is_string) {
        return None;
    }
    match fields.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// A JSON value as a step output.
fn as_output(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// What an `error` line says: its `message`, its `error`, or the line.
fn error_words(mut fields: Map<String, Value>) -> String {
    for key in ["message", "error"] {
        if let Some(s) = take_string(&mut fields, key) {
            if !s.trim().is_empty() {
                return s;
            }
        }
    }
    if fields.is_empty() {
        "the command reported an error and said nothing more".to_string()
    } else {
        format!("the command reported an error: {}", Value::Object(fields))
    }
}

/// Stdout put back into lines and read as the protocol.
#[derive(Debug, Default)]
pub struct Reader {
    /// The line begun and not yet ended.
    pending: String,
    /// The pending line grew past [`MAX_LINE`]: the rest of it is output.
    overlong: bool,
}

impl Reader {
    /// The pieces `chunk` completes; runs of output lines come as one piece.
    pub fn feed(&mut self, chunk: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while let Some(pos) = rest.find('\n') {
            let (line, after) = rest.split_at(pos + 1);
            rest = after;
            if self.overlong {
                self.overlong = false;
                push_output(&mut out, line);
                continue;
            }
            self.pending.push_str(line);
            let line = std::mem::take(&mut self.pending);
            match parse_line(&line) {
                Some(m) => out.push(Piece::Message(m)),
                None => push_output(&mut out, &line),
            }
        }
        if self.overlong {
            push_output(&mut out, rest);
        } else {
            self.pending.push_str(rest);
            if self.pending.len() > MAX_LINE {
                self.overlong = true;
                let long = std::mem::take(&mut self.pending);
                push_output(&mut out, &long);
            }
        }
        out
    }

    /// The last line, when the command ended without a newline.
    pub fn finish(&mut self) -> Vec<Piece> {
        let line = std::mem::take(&mut self.pending);
        if line.is_empty() {
            return Vec::new();
        }
        match parse_line(&line) {
            Some(m) => vec![Piece::Message(m)],
            None => vec![Piece::Output(line)],
        }
    }
}

/// `text` as output, joined to the output piece before it.
fn push_output(out: &mut Vec<Piece>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Piece::Output(last)) = out.last_mut() {
        last.push_str(text);
    } else {
        out.push(Piece::Output(text.to_string()));
    }
}

/// What a step heard of its command's messages, as they came: progress
/// told as events, output passed on, the completion's outputs and the
/// first error kept for the end.
#[derive(Debug, Default)]
pub struct Heard {
    reader: Reader,
    /// The completions' fields, later ones winning.
    pub outputs: IndexMap<String, String>,
    /// The first `error` message.
    pub error: Option<String>,
}

impl Heard {
    /// A piece of stdout.
    pub fn stdout(&mut self, ctx: &ActionCtx<'_>, chunk: &str) {
        let pieces = self.reader.feed(chunk);
        self.take(ctx, pieces);
    }

    /// The command ended: its last, unended line.
    pub fn finish(&mut self, ctx: &ActionCtx<'_>) {
        let pieces = self.reader.finish();
        self.take(ctx, pieces);
    }

    fn take(&mut self, ctx: &ActionCtx<'_>, pieces: Vec<Piece>) {
        for piece in pieces {
            match piece {
                Piece::Output(text) => ctx.output(StreamKind::Stdout, &text),
                Piece::Message(Message::Progress {
                    status,
                    message,
                    data,
                }) => ctx.events.emit(EventKind::StepProgress {
                    step: ctx.step.to_string(),
                    status,
                    message,
                    data,
                }),
                Piece::Message(Message::Completion(fields)) => self.outputs.extend(fields),
                Piece::Message(Message::Error(words)) => {
                    self.error.get_or_insert(words);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_progress_update_keeps_every_field() {
        let m = parse_line(
            r#"{"type":"progress-update","status":"running","message":"story 1","story":1}"#,
        );
        assert_eq!(
            m,
            Some(Message::Progress {
                status: Some("running".into()),
                message: Some("story 1".into()),
                data: json!({"story": 1}),
            })
        );
        // A status that is not a string stays in the data.
        let m = parse_line(r#"{"type":"progress-update","status":3}"#);
        assert_eq!(
            m,
            Some(Message::Progress {
                status: None,
                message: None,
                data: json!({"status": 3}),
            })
        );
    }

    #[test]
    fn a_completion_gives_its_result_as_outputs() {
        let Some(Message::Completion(o)) = parse_line(
            r#"{"type":"completion","result":{"score":"9","passed":true,"list":[1,2]}}"#,
        ) else {
            panic!("not a completion");
        };
        assert_eq!(o["score"], "9");
        assert_eq!(o["passed"], "true");
        assert_eq!(o["list"], "[1,2]");
        // Without a `result` object, the line's own fields.
        let Some(Message::Completion(o)) = parse_line(r#"{"type":"completion","done":1}"#) else {
            panic!("not a completion");
        };
        assert_eq!(o.get("done").map(String::as_str), Some("1"));
        assert!(!o.contains_key("type"));
    }

    #[test]
    fn an_error_says_its_message() {
        let m = parse_line(r#"{"type":"error","message":"disk full"}"#);
        assert_eq!(m, Some(Message::Error("disk full".into())));
        let m = parse_line(r#"{"type":"error","error":"no task"}"#);
        assert_eq!(m, Some(Message::Error("no task".into())));
        let Some(Message::Error(words)) = parse_line(r#"{"type":"error","code":7}"#) else {
            panic!("not an error");
        };
        assert!(words.contains(r#"{"code":7}"#), "{words}");
    }

    #[test]
    fn other_lines_are_not_messages() {
        for line in [
            "plain text",
            "",
            "{not json",
            "[1,2]",
            r#"{"no":"type"}"#,
            r#"{"type":"task-request","task":"x"}"#,
            r#"{"type":7}"#,
            r#""{\"type\":\"error\"}""#,
        ] {
            assert_eq!(parse_line(line), None, "{line}");
        }
    }

    #[test]
    fn lines_cut_anywhere_are_put_back_together() {
        let mut r = Reader::default();
        let mut all = Vec::new();
        for piece in [
            "hello\n{\"type\":\"progr",
            "ess-update\",\"status\":\"a\"}\nmid",
            "dle\nend\n",
            r#"{"type":"error","message":"x"}"#,
        ] {
            all.extend(r.feed(piece));
        }
        all.extend(r.finish());
        assert_eq!(
            all,
            vec![
                Piece::Output("hello\n".into()),
                Piece::Message(Message::Progress {
                    status: Some("a".into()),
                    message: None,
                    data: json!({}),
                }),
                Piece::Output("middle\nend\n".into()),
                Piece::Message(Message::Error("x".into())),
            ]
        );
    }

    #[test]
    fn an_overlong_line_is_output() {
        let mut r = Reader::default();
        let big = format!(
            "{{\"type\":\"error\",\"message\":\"{}",
            "x".repeat(MAX_LINE)
        );
        let mut all = r.feed(&big);
        all.extend(r.feed("\"}\nafter\n"));
        let text: String = all
            .iter()
            .map(|p| match p {
                Piece::Output(s) => s.as_str(),
                Piece::Message(_) => panic!("an overlong line became a message"),
            })
            .collect();
        assert!(text.ends_with("\"}\nafter\n"));
        assert_eq!(text.len(), big.len() + "\"}\nafter\n".len());
    }
}
