//! Where a job keeps one sandbox instance's sandbox: made by the first step
//! that needs it (once, however many steps wait), and made anew when the
//! one it held was lost (a deleted or evicted pod), so that a retry has
//! somewhere to run.

use std::future::Future;

use tokio::sync::Mutex;

use super::step_error::ProvisionError;
use crate::sandbox::Sandbox;

/// One sandbox instance's sandbox (generic for the tests), or why it could
/// not be made.
pub(super) struct Slot<T = Sandbox> {
    held: Mutex<Held<T>>,
}

struct Held<T> {
    made: Option<Result<T, ProvisionError>>,
    /// How many times it was made anew.
    renewals: u32,
}

impl<T: Clone> Default for Slot<T> {
    fn default() -> Self {
        Slot {
            held: Mutex::new(Held {
                made: None,
                renewals: 0,
            }),
        }
    }
}

impl<T: Clone> Slot<T> {
    /// The sandbox, made by `make` when there is none yet.
    pub async fn get_or_make<F>(&self, make: impl FnOnce() -> F) -> Result<T, ProvisionError>
    where
        F: Future<Output = Result<T, ProvisionError>>,
    {
        let mut held = self.held.lock().await;
        if let Some(made) = &held.made {
            return made.clone();
        }
        let first = make().await;
        held.made = Some(first.clone());
        first
    }

    /// A sandbox in place of a lost one: `make` is given the renewal's
    /// number (1 for the first) and runs only while the slot still holds
    /// the lost one (`is_lost`); steps that lost it too share what it made.
    pub async fn renew<F>(
        &self,
        is_lost: impl FnOnce(&T) -> bool,
        make: impl FnOnce(u32) -> F,
    ) -> Result<T, ProvisionError>
    where
        F: Future<Output = Result<T, ProvisionError>>,
    {
        let mut held = self.held.lock().await;
        match &held.made {
            Some(Ok(s)) if !is_lost(s) => return Ok(s.clone()),
            Some(Err(e)) => return Err(e.clone()),
            _ => {}
        }
        held.renewals += 1;
        let fresh = make(held.renewals).await;
        held.made = Some(fresh.clone());
        fresh
    }

    /// The sandbox it holds, if one was made.
    pub async fn current(&self) -> Option<T> {
        self.held.lock().await.made.clone()?.ok()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn made_once_then_renewed_once_for_every_step_that_lost_it() {
        let slot: Slot<String> = Slot::default();
        let first = slot.get_or_make(|| async { Ok("pod".into()) }).await;
        let again = slot.get_or_make(|| async { panic!("made twice") }).await;
        assert_eq!(
            (first.unwrap(), again.unwrap()),
            ("pod".into(), "pod".into())
        );
        let lost = |s: &String| s == "pod";
        let fresh = slot.renew(lost, |n| async move { Ok(format!("pod-{n}")) });
        assert_eq!(fresh.await.unwrap(), "pod-1");
        // A second step that lost "pod" gets "pod-1", not a third sandbox.
        let shared = slot.renew(lost, |_| async { panic!("renewed twice") });
        assert_eq!(shared.await.unwrap(), "pod-1");
        let lost = |s: &String| s == "pod-1";
        let next = slot.renew(lost, |n| async move { Ok(format!("pod-{n}")) });
        assert_eq!(next.await.unwrap(), "pod-2");
        assert_eq!(slot.current().await.as_deref(), Some("pod-2"));
    }

    #[tokio::test]
    async fn a_renewal_that_failed_is_told_to_the_next_step() {
        let slot: Slot<String> = Slot::default();
        slot.get_or_make(|| async { Ok("pod".into()) })
            .await
            .unwrap();
        let failed = ProvisionError::Create(Arc::new(crate::error::Error::Cancelled));
        let err = slot.renew(|_| true, |_| async { Err(failed) }).await;
        assert!(err.is_err());
        let again = slot.renew(|_| true, |_| async { panic!("renewed twice") });
        assert!(again.await.is_err());
        assert_eq!(slot.current().await, None);
    }
}
