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

/// [`wait`] for a future whose error is not the library's.
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
    let mut task = rt.spawn(fut);
    loop {
        let joined =
            py.detach(|| rt.block_on(async { tokio::time::timeout(SLICE, &mut task).await }));
        if let Ok(done) = joined {
            return done
                .map_err(|e| PyRuntimeError::new_err(format!("pocketdock task failed: {e}")));
        }
        if let Err(signal) = py.check_signals() {
            if let Some(token) = cancel {
                token.cancel();
                let _ = py.detach(|| {
                    rt.block_on(async { tokio::time::timeout(KILL_GRACE, &mut task).await })
                });
            }
            return Err(signal);
        }
    }
}
