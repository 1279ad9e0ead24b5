//! `recycle: true`: a job's reset containers, waiting for the next
//! instance of their declared sandbox.
//!
//! A group is one declared sandbox; it counts the instances not yet
//! released. While some remain, a released container is reset and put
//! here; the last release closes the group, and whatever it holds then
//! (or is reset after) is removed. An instance about to create waits for a
//! reset that is under way rather than create one more container, so a
//! job holds about as many containers as it runs instances at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use crate::fleet::Pristine;
use crate::plan::Plan;
use crate::sandbox::Sandbox;

/// A reset container and what its next reset needs.
pub(super) type Warm = (Sandbox, Arc<Pristine>);

#[derive(Default)]
struct Group {
    free: Vec<Warm>,
    /// Resets under way.
    resetting: usize,
    /// Instances not released yet.
    left: usize,
}

/// The job's recycled containers, by declared sandbox.
#[derive(Default)]
pub(super) struct RecycleBin {
    groups: Mutex<HashMap<String, Group>>,
    changed: Notify,
}

impl RecycleBin {
    /// A group per declared sandbox with `recycle: true`; none when the
    /// backend cannot reset containers (`recycles` false).
    pub(super) fn of(plan: &Plan, recycles: bool) -> RecycleBin {
        let mut groups: HashMap<String, Group> = HashMap::new();
        for inst in plan.sandboxes.iter().filter(|i| i.recycle && recycles) {
            groups.entry(inst.sandbox.clone()).or_default().left += 1;
        }
        RecycleBin {
            groups: Mutex::new(groups),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Group>> {
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A reset container of `sandbox`, waiting for a reset under way;
    /// `None`: create one.
    pub(super) async fn take(&self, sandbox: &str) -> Option<Warm> {
        loop {
            // Registered before the lock is let go: no wake-up is missed.
            let changed = self.changed.notified();
            {
                let mut groups = self.lock();
                let g = groups.get_mut(sandbox)?;
                if let Some(w) = g.free.pop() {
                    return Some(w);
                }
                if g.resetting == 0 {
                    return None;
                }
            }
            changed.await;
        }
    }

    /// An instance of `sandbox` is released. `true`: reset its container
    /// for a later one (then [`RecycleBin::reset_done`]); `false`: no
    /// instance is left, remove it, and the group's `drained` ones.
    pub(super) fn released(&self, sandbox: &str, recyclable: bool) -> (bool, Vec<Warm>) {
        let mut groups = self.lock();
        let Some(g) = groups.get_mut(sandbox) else {
            return (false, Vec::new());
        };
        g.left = g.left.saturating_sub(1);
        if g.left == 0 {
            let drained = std::mem::take(&mut g.free);
            drop(groups);
            self.changed.notify_waiters();
            return (false, drained);
        }
        if recyclable {
            g.resetting += 1;
        }
        (recyclable, Vec::new())
    }

    /// A reset ended: `warm` is the container when it succeeded. It is
    /// given back when nobody may use it any more (remove it then).
    pub(super) fn reset_done(&self, sandbox: &str, warm: Option<Warm>) -> Option<Warm> {
        let mut groups = self.lock();
        let back = match groups.get_mut(sandbox) {
            Some(g) => {
                g.resetting = g.resetting.saturating_sub(1);
                match warm {
                    Some(w) if g.left > 0 => {
                        g.free.push(w);
                        None
                    }
                    other => other,
                }
            }
            None => warm,
        };
        drop(groups);
        self.changed.notify_waiters();
        back
    }
}
