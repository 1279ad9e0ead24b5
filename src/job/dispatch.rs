//! The dispatcher: one thread hands every event to every consumer, in order.
//!
//! Steps run on many tasks; consumers (the recorder, reporters) are plain
//! synchronous code that writes files and terminals. A channel joins them:
//! emitting never blocks a step, and one blocking thread owns every
//! consumer, so each sees the events in one order. The recorder comes first,
//! so nothing a reporter shows is missing from the record.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::secret_mask::SecretMask;
use crate::event::{Consumer, Event, EventKind};

/// What goes down the channel.
#[derive(Debug)]
enum Msg {
    Event(Event),
    /// The job is over: finish the consumers, even if a clone of an
    /// [`Emitter`] is still alive somewhere.
    End,
}

/// Output bytes that may wait for the consumer thread before a step's
/// output stops being read (the engine then waits too): memory stays
/// bounded however fast a step prints.
const BACKLOG_LIMIT: usize = 8 * 1024 * 1024;

/// Output bytes sent and not yet handled.
#[derive(Debug, Default)]
struct Backlog {
    bytes: Mutex<usize>,
    drained: Condvar,
}

/// Where the job tells what happens; cheap to clone.
#[derive(Debug, Clone)]
pub struct Emitter {
    tx: mpsc::UnboundedSender<Msg>,
    backlog: Arc<Backlog>,
}

impl Emitter {
    /// Stamp `kind` now and send it. Consumers that went away are not the
    /// job's problem. Output waits (briefly blocking its task's thread)
    /// while more than [`BACKLOG_LIMIT`] bytes of it wait to be handled.
    pub fn emit(&self, kind: EventKind) {
        let len = match &kind {
            EventKind::Output { data, .. } => data.len(),
            _ => 0,
        };
        if len > 0 {
            let mut bytes = self
                .backlog
                .bytes
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            while *bytes > BACKLOG_LIMIT && !self.tx.is_closed() {
                bytes = self
                    .backlog
                    .drained
                    .wait_timeout(bytes, Duration::from_millis(100))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            *bytes += len;
        }
        let _ = self.tx.send(Msg::Event(Event::now(kind)));
    }
}

impl Backlog {
    fn handled(&self, len: usize) {
        if len > 0 {
            let mut bytes = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
            *bytes = bytes.saturating_sub(len);
            self.drained.notify_all();
        }
    }
}

/// The consumer thread.
#[derive(Debug)]
pub struct Dispatch {
    tx: mpsc::UnboundedSender<Msg>,
    handle: JoinHandle<()>,
}

impl Dispatch {
    /// Start a thread feeding `consumers`, in their order.
    #[must_use]
    #[cfg(test)]
    pub fn start(consumers: Vec<Box<dyn Consumer>>) -> (Emitter, Dispatch) {
        Dispatch::start_masked(consumers, SecretMask::default())
    }

    /// Like [`Dispatch::start`], every event first run through `mask`, so
    /// no consumer ever sees a secret's value.
    #[must_use]
    pub fn start_masked(
        mut consumers: Vec<Box<dyn Consumer>>,
        mut mask: SecretMask,
    ) -> (Emitter, Dispatch) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
        let backlog = Arc::new(Backlog::default());
        let drained = Arc::clone(&backlog);
        let handle = tokio::task::spawn_blocking(move || {
            while let Some(Msg::Event(event)) = rx.blocking_recv() {
                let len = match &event.kind {
                    EventKind::Output { data, .. } => data.len(),
                    _ => 0,
                };
                if matches!(event.kind, EventKind::JobFinished { .. }) {
                    for held in mask.drain() {
                        for c in &mut consumers {
                            c.handle(&held);
                        }
                    }
                }
                for event in mask.event(event) {
                    for c in &mut consumers {
                        c.handle(&event);
                    }
                }
                drained.handled(len);
            }
            // Nothing will drain any more: let waiting emitters go.
            drained.handled(usize::MAX);
            for c in &mut consumers {
                c.finish();
            }
        });
        (
            Emitter {
                tx: tx.clone(),
                backlog,
            },
            Dispatch { tx, handle },
        )
    }

    /// Wait until every event emitted so far has been handled and every
    /// consumer finished; events emitted later are dropped.
    pub async fn finish(self) {
        let _ = self.tx.send(Msg::End);
        let _ = self.handle.await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::Dispatch;
    use crate::event::{Consumer, Event, EventKind};

    /// Notes every event it sees (and its finish) in a shared log.
    struct Note(&'static str, Arc<Mutex<Vec<String>>>);

    impl Consumer for Note {
        fn handle(&mut self, event: &Event) {
            if let EventKind::Warning { message } = &event.kind {
                self.1.lock().unwrap().push(format!("{} {message}", self.0));
            }
        }
        fn finish(&mut self) {
            self.1.lock().unwrap().push(format!("{} done", self.0));
        }
    }

    #[tokio::test]
    async fn each_event_reaches_every_consumer_in_order_and_finish_ends_them() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (events, dispatch) = Dispatch::start(vec![
            Box::new(Note("recorder", log.clone())),
            Box::new(Note("reporter", log.clone())),
        ]);
        let kept_alive = events.clone();
        for m in ["a", "b"] {
            events.emit(EventKind::Warning { message: m.into() });
        }
        // A clone still alive does not keep the consumers from finishing.
        dispatch.finish().await;
        drop(kept_alive);
        assert_eq!(
            *log.lock().unwrap(),
            [
                "recorder a",
                "reporter a",
                "recorder b",
                "reporter b",
                "recorder done",
                "reporter done"
            ]
        );
    }
}
