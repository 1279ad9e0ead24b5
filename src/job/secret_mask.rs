//! Secret values out of every event, before any consumer sees one.
//!
//! The dispatcher runs every event through one [`SecretMask`], so the
//! recorder (history, `instance.toml`, step logs) and every reporter get
//! the same masked text, and none of them has to know about secrets.
//! Output arrives in arbitrary pieces, so a value can be split across two
//! of them: the end of each piece that could begin a secret is held back
//! (per step and stream) and joined to the next piece, or let out, masked,
//! when the step's next other event comes.

use std::collections::HashMap;

use crate::event::{Event, EventKind, StreamKind};

/// What a secret becomes.
pub const MASK: &str = "***";

/// Masks secret values in events.
#[derive(Debug, Default)]
pub struct SecretMask {
    /// Values, longest first (so a value containing another is masked whole).
    values: Vec<String>,
    /// Held-back ends of output, per (step, stream).
    held: HashMap<(String, StreamKind), String>,
}

impl SecretMask {
    /// Mask `values` (empty ones are ignored: they would match everywhere).
    #[must_use]
    pub fn new(values: impl IntoIterator<Item = String>) -> SecretMask {
        let mut values: Vec<String> = values.into_iter().filter(|v| !v.is_empty()).collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        SecretMask {
            values,
            held: HashMap::new(),
        }
    }

    /// True when there is nothing to mask.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `s` with every value replaced.
    #[must_use]
    pub fn text(&self, s: &str) -> String {
        let mut s = s.to_string();
        for v in &self.values {
            if s.contains(v.as_str()) {
                s = s.replace(v.as_str(), MASK);
            }
        }
        s
    }

    /// The events to pass on for `event`: output held back or let out,
    /// every text masked.
    pub fn event(&mut self, event: Event) -> Vec<Event> {
        if self.values.is_empty() {
            return vec![event];
        }
        let ts = event.ts;
        let mut out = Vec::new();
        let kind = match event.kind {
            EventKind::Output { step, stream, data } => {
                let key = (step, stream);
                let mut text = self.held.remove(&key).unwrap_or_default();
                text.push_str(&data);
                let masked = self.text(&text);
                let keep = self.unfinished(&masked);
                let (now, later) = masked.split_at(masked.len() - keep);
                if !later.is_empty() {
                    self.held.insert(key.clone(), later.to_string());
                }
                if now.is_empty() {
                    return out;
                }
                EventKind::Output {
                    step: key.0,
                    stream,
                    data: now.to_string(),
                }
            }
            other => {
                if let Some(step) = step_of(&other) {
                    out.extend(
                        self.release(step)
                            .into_iter()
                            .map(|kind| Event { ts, kind }),
                    );
                }
                self.kind(other)
            }
        };
        out.push(Event { ts, kind });
        out
    }

    /// Held output of `step`, let out (it can no longer become a secret).
    fn release(&mut self, step: &str) -> Vec<EventKind> {
        let mut out = Vec::new();
        for stream in [StreamKind::Stdout, StreamKind::Stderr, StreamKind::System] {
            if let Some(data) = self.held.remove(&(step.to_string(), stream)) {
                out.push(EventKind::Output {
                    step: step.to_string(),
                    stream,
                    data,
                });
            }
        }
        out
    }

    /// Bytes at the end of `s` that begin some value (and so may be the
    /// first part of one split across pieces).
    fn unfinished(&self, s: &str) -> usize {
        let mut keep = 0;
        for v in &self.values {
            for n in (1..v.len().min(s.len() + 1)).rev() {
                if n <= keep {
                    break;
                }
                if s.is_char_boundary(s.len() - n) && v.is_char_boundary(n) && s.ends_with(&v[..n])
                {
                    keep = n;
                    break;
                }
            }
        }
        keep
    }

    fn kind(&self, kind: EventKind) -> EventKind {
        let m = |s: String| self.text(&s);
        let mo = |s: Option<String>| s.map(|s| self.text(&s));
        match kind {
            EventKind::StepStarted {
                step,
                sandbox,
                attempt,
                kind,
                action,
            } => EventKind::StepStarted {
                step,
                sandbox,
                attempt,
                kind,
                action: m(action),
            },
            EventKind::StepFinished {
                step,
                sandbox,
                status,
                exit_code,
                duration_ms,
                attempts,
                reason,
                artifacts,
                usage,
            } => EventKind::StepFinished {
                step,
                sandbox,
                status,
                exit_code,
                duration_ms,
                attempts,
                reason: mo(reason),
                artifacts,
                usage,
            },
            EventKind::Warning { message } => EventKind::Warning {
                message: m(message),
            },
            EventKind::StepProgress {
                step,
                status,
                message,
                data,
            } => EventKind::StepProgress {
                step,
                status: mo(status),
                message: mo(message),
                data: self.json(data),
            },
            EventKind::ImageBuildFinished {
                sandbox,
                profile,
                image,
                status,
                duration_ms,
                reason,
            } => EventKind::ImageBuildFinished {
                sandbox,
                profile,
                image,
                status,
                duration_ms,
                reason: mo(reason),
            },
            EventKind::SandboxReleased {
                sandbox,
                container,
                kept,
                recycled,
                left,
            } => EventKind::SandboxReleased {
                recycled,
                sandbox,
                container,
                kept,
                left: mo(left),
            },
            other => other,
        }
    }

    /// `value` with every string in it masked (keys included).
    fn json(&self, value: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|v| self.json(v)).collect()),
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .map(|(k, v)| (self.text(&k), self.json(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// Everything still held, let out (the job is over).
    pub fn drain(&mut self) -> Vec<Event> {
        let steps: Vec<String> = self.held.keys().map(|(s, _)| s.clone()).collect();
        let mut out = Vec::new();
        for s in steps {
            out.extend(self.release(&s).into_iter().map(Event::now));
        }
        out
    }
}

fn step_of(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::StepStarted { step, .. }
        | EventKind::StepProgress { step, .. }
        | EventKind::StepFinished { step, .. } => Some(step),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::StepStatus;

    fn output(data: &str) -> Event {
        Event::now(EventKind::Output {
            step: "s@b".into(),
            stream: StreamKind::Stdout,
            data: data.into(),
        })
    }

    fn texts(events: &[Event]) -> String {
        events
            .iter()
            .map(|e| match &e.kind {
                EventKind::Output { data, .. } => data.clone(),
                EventKind::StepFinished { reason, .. } => {
                    format!("|end:{}", reason.clone().unwrap_or_default())
                }
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn whole_and_split_values_are_masked() {
        let mut m = SecretMask::new(["hunter2".to_string(), String::new()]);
        let mut all = Vec::new();
        for piece in [
            "pass=hunter2\nnext=hun",
            "ter2 and hu",
            "nt",
            "er2",
            "\nhunt",
            "ing\nhu",
        ] {
            all.extend(m.event(output(piece)));
        }
        all.extend(m.event(Event::now(EventKind::StepFinished {
            step: "s@b".into(),
            sandbox: "b".into(),
            status: StepStatus::Failed,
            exit_code: Some(1),
            duration_ms: 1,
            usage: None,
            attempts: 1,
            reason: Some("printed hunter2".into()),
            artifacts: vec![],
        })));
        let t = texts(&all);
        assert_eq!(t, "pass=***\nnext=*** and ***\nhunting\nhu|end:printed ***");
        assert!(!t.contains("hunter2"));
    }

    #[test]
    fn without_values_events_pass_untouched() {
        let mut m = SecretMask::new(Vec::new());
        assert!(m.is_empty());
        assert_eq!(texts(&m.event(output("abc"))), "abc");
    }

    #[test]
    fn progress_is_masked_everywhere() {
        let mut m = SecretMask::new(["hunter2".to_string()]);
        let out = m.event(Event::now(EventKind::StepProgress {
            step: "s@b".into(),
            status: Some("hunter2".into()),
            message: Some("saw hunter2".into()),
            data: serde_json::json!({"k": ["hunter2", 1], "hunter2": true}),
        }));
        let wire = serde_json::to_string(&out[0]).unwrap();
        assert!(!wire.contains("hunter2"), "{wire}");
        assert!(wire.contains(r#""message":"saw ***""#), "{wire}");
    }

    #[test]
    fn a_value_held_at_the_end_is_let_out_by_drain() {
        let mut m = SecretMask::new(["secret".to_string()]);
        assert_eq!(texts(&m.event(output("a sec"))), "a ");
        assert_eq!(texts(&m.drain()), "sec");
    }
}
