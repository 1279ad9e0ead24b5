//! Library errors as the Python exceptions of `pocketdock.errors`: one
//! class per `Error` kind, manifest diagnostics attached.

use pocketdock::diag::{Diagnostic, ManifestError};
use pocketdock::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The exception class named after `err`'s kind.
fn class_of(err: &Error) -> &'static str {
    match err {
        Error::EngineUnreachable { .. } => "EngineUnreachable",
        Error::Api { .. } | Error::Kubernetes { .. } => "EngineError",
        Error::Transport { .. } => "TransportError",
        Error::EngineStalled { .. } => "EngineStalled",
        Error::Protocol { .. } => "ProtocolError",
        Error::ContainerNotRunning { .. } => "ContainerNotRunning",
        Error::ContainerGone { .. } | Error::SandboxLost { .. } => "ContainerGone",
        Error::NameInUse { .. } => "NameInUse",
        Error::ImageMissing { .. } => "ImageMissing",
        Error::UnknownProfile { .. } => "UnknownProfile",
        Error::BadProjectProfile { .. } => "BadProjectProfile",
        Error::Build { .. } => "BuildError",
        Error::Invalid { .. }
        | Error::DiskCapUnsupported { .. }
        | Error::NotOnBackend { .. }
        | Error::ProcessForkRefused { .. } => "InvalidValue",
        Error::NotFound { .. } => "NotFound",
        Error::PrivilegedPort { .. } => "PrivilegedPort",
        Error::LocalPathMissing { .. } => "LocalPathMissing",
        Error::SandboxPathMissing { .. } => "SandboxPathMissing",
        Error::PathConflict { .. } => "PathConflict",
        Error::UnsafeArchive { .. } => "UnsafeArchive",
        Error::ShellMissing { .. } => "ShellMissing",
        Error::SessionClosed { .. } => "SessionClosed",
        Error::Kernel { .. } => "KernelError",
        Error::BadArchive { .. } => "BadArchive",
        Error::Cancelled => "Cancelled",
        Error::Settings(_) => "SettingsError",
        Error::Io { .. } => "LocalIoError",
    }
}

/// `err` as an instance of its `pocketdock.errors` class.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| {
        let diagnostics = match &err {
            Error::Settings(m) => m.diagnostics().to_vec(),
            _ => Vec::new(),
        };
        raise(py, class_of(&err), &err.to_string(), &diagnostics)
    })
}

/// A manifest that cannot be loaded or planned, as `ManifestError`.
pub fn manifest_to_py(err: &ManifestError) -> PyErr {
    let message = err.to_string();
    Python::attach(|py| raise(py, "ManifestError", message.trim_end(), err.diagnostics()))
}

fn raise(py: Python<'_>, class: &str, message: &str, diagnostics: &[Diagnostic]) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let module = py.import("pocketdock.errors")?;
        let list = diagnostics
            .iter()
            .map(|d| diagnostic(py, d))
            .collect::<PyResult<Vec<_>>>()?;
        let exc = module.getattr(class)?.call1((message, list))?;
        Ok(PyErr::from_value(exc))
    })();
    made.unwrap_or_else(|e| PyRuntimeError::new_err(format!("{message} ({e})")))
}

fn diagnostic<'py>(py: Python<'py>, d: &Diagnostic) -> PyResult<Bound<'py, PyAny>> {
    let kw = PyDict::new(py);
    kw.set_item("file", d.path.to_string_lossy().into_owned())?;
    kw.set_item("line", d.line)?;
    kw.set_item("column", d.col)?;
    kw.set_item("message", &d.message)?;
    kw.set_item("hint", d.hint.as_deref())?;
    kw.set_item("line_text", &d.line_text)?;
    py.import("pocketdock.errors")?
        .getattr("Diagnostic")?
        .call((), Some(&kw))
}
