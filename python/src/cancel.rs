//! `pocketdock._native.CancelToken`: lets the async layer kill a command
//! whose task was cancelled, from another thread.

use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

/// Cancelling it kills the command it was given to, and its process tree.
#[pyclass(module = "pocketdock._native", frozen)]
#[derive(Default)]
pub struct CancelToken {
    pub token: CancellationToken,
}

#[pymethods]
impl CancelToken {
    #[new]
    fn new() -> CancelToken {
        CancelToken::default()
    }

    fn cancel(&self) {
        self.token.cancel();
    }

    fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}
