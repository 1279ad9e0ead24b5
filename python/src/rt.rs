//! The one tokio runtime behind every call, and the wait that releases the
//! GIL and answers Ctrl-C while the engine works.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use crate::errors;

/// How often a wait looks for a signal: Ctrl-C is answered within it.
const SLICE: Duration = Duration::from_millis(100);
/// How long a cancelled command gets to have its process tree killed.
const KILL_GRACE: Duration = Duration::from_millis(800);

/// The runtime: two workers keep background reads (detached processes,
/// sessions) going while Python code runs.
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("pocketdock")
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// Run `fut` to its end with the GIL released. A signal raises at once:
/// `cancel`, when given, is cancelled first and the task gets a moment to
/// kill its command; otherwise the task finishes on its own (whatever it
/// makes is dropped, so the drop guard removes a half-made sandbox).
pub fn wait<T, F>(py: Python<'_>, cancel: Option<&CancellationToken>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = pocketdock::Result<T>> + Send + 'static,
{
    wait_raw(py, cancel, fut)?.map_err(errors::to_py)
}

/// [`wait`] for a future whose error is not the library's. The future runs
/// on the calling thread (no hand-off to a worker: a warm `run` pays no
/// thread switch); after a signal it is left to finish on the runtime.
pub fn wait_raw<T, F>(py: Python<'_>, cancel: Option<&CancellationToken>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(PyRuntimeError::new_err(
            "pocketdock calls cannot be made from a callback: hand the work to another thread",
        ));
    }
    let rt = runtime();
    let mut fut = Box::pin(fut);
    loop {
        if let Some(done) = py.detach(|| drive(rt, &mut fut, SLICE)) {
            return Ok(done);
        }
        if let Err(signal) = py.check_signals() {
            if let Some(token) = cancel {
                token.cancel();
                if py.detach(|| drive(rt, &mut fut, KILL_GRACE)).is_some() {
                    return Err(signal);
                }
            }
            // What it makes is dropped when it ends: a sandbox goes with its guard.
            drop(rt.spawn(fut));
            return Err(signal);
        }
    }
}

/// Poll `fut` on this thread for at most `slice`.
fn drive<T, F: Future<Output = T>>(
    rt: &Runtime,
    fut: &mut std::pin::Pin<Box<F>>,
    slice: Duration,
) -> Option<T> {
    rt.block_on(async { tokio::time::timeout(slice, fut.as_mut()).await.ok() })
}
