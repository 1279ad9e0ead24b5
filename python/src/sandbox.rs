//! `pocketdock._native.Sandbox`: one sandbox handle. Results cross to
//! Python as JSON (the library's own serialisation); the Python layer makes
//! typed objects of them.

use std::sync::{Arc, Mutex};

use pocketdock::project::Project;
use pocketdock::sandbox::{ForkCopies, ForkLevel, ForkOptions, ShellOptions};
use pocketdock::store::{PersistentSandbox, RunLogger, SandboxRecord};
use pocketdock::Sandbox as Handle;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tokio_util::sync::CancellationToken;

use crate::cancel::CancelToken;
use crate::{callbacks, json, rt, spec};

/// A sandbox handle; dropping the last one removes a sandbox it created
/// (unless kept or persistent).
#[pyclass(module = "pocketdock._native", frozen)]
pub struct Sandbox {
    handle: Mutex<Handle>,
}

impl Sandbox {
    pub fn wrap(handle: Handle) -> Sandbox {
        Sandbox {
            handle: Mutex::new(handle),
        }
    }

    /// A clone of the handle, for a call that outlives the lock.
    pub fn handle(&self) -> Handle {
        self.handle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[pymethods]
impl Sandbox {
    /// Create and start a sandbox from a JSON request.
    #[staticmethod]
    fn create(py: Python<'_>, request: &str) -> PyResult<Sandbox> {
        let req = spec::request(request).map_err(crate::errors::to_py)?;
        let handle = rt::wait(py, None, async move {
            let on = crate::engine::backend(
                req.backend.as_deref(),
                req.namespace.as_deref(),
                &req.project,
            );
            let backend = on.await?;
            if req.spec.persist {
                let p = PersistentSandbox::create_with_data(
                    &backend,
                    &req.spec,
                    &req.project,
                    req.data_dir.as_deref(),
                )
                .await?;
                Ok(p.into_sandbox())
            } else {
                Handle::create(&backend, &req.spec).await
            }
        })?;
        Ok(Sandbox::wrap(handle))
    }

    /// A handle on an existing sandbox by name, on the backend `backend`
    /// (as for `create`) names: it removes nothing when dropped.
    #[staticmethod]
    #[pyo3(signature = (name, backend=None, namespace=None))]
    fn attach(
        py: Python<'_>,
        name: String,
        backend: Option<String>,
        namespace: Option<String>,
    ) -> PyResult<Sandbox> {
        let handle = rt::wait(py, None, async move {
            let project = Project::find(&std::env::current_dir().unwrap_or_default());
            let on = crate::engine::backend(backend.as_deref(), namespace.as_deref(), &project);
            let mut sb = Handle::attach(on.await?, &name);
            let inspect = sb.inspect().await?;
            log_runs(&mut sb, inspect.label(pocketdock::labels::DATA_PATH));
            Ok(sb)
        })?;
        Ok(Sandbox::wrap(handle))
    }

    /// Hand this process's terminal to `command` (bash when `None`) on a
    /// TTY until it exits: its exit code.
    #[pyo3(signature = (command=None, user=None, cwd=None))]
    fn shell(
        &self,
        py: Python<'_>,
        command: Option<String>,
        user: Option<String>,
        cwd: Option<String>,
    ) -> PyResult<i64> {
        let opts = ShellOptions {
            command: command.into_iter().collect(),
            user,
            workdir: cwd,
            term: std::env::var("TERM").ok().filter(|t| !t.is_empty()),
            env: Vec::new(),
        };
        let sb = self.handle();
        rt::wait(py, None, async move { sb.sessions().shell(&opts).await })
    }

    #[getter]
    fn name(&self) -> String {
        self.handle().name().to_string()
    }

    #[getter]
    fn id(&self) -> String {
        self.handle().id().to_string()
    }

    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.handle().warnings().to_vec()
    }

    fn removed_on_drop(&self) -> bool {
        self.handle().removed_on_drop()
    }

    fn keep(&self) {
        self.handle().keep();
    }

    /// Run a command to its end; Ctrl-C kills its process tree and raises.
    #[pyo3(signature = (command, lang, timeout, max_output, env, cwd, user, cancel=None))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        command: String,
        lang: &str,
        timeout: Option<f64>,
        max_output: Option<&str>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
        user: Option<String>,
        cancel: Option<PyRef<'_, CancelToken>>,
    ) -> PyResult<String> {
        let mut opts = spec::run_options(lang, timeout, max_output, env, cwd, user)
            .map_err(crate::errors::to_py)?;
        let token = cancel.map_or_else(CancellationToken::new, |c| c.token.clone());
        opts.cancel = Some(token.clone());
        let sb = self.handle();
        let result = rt::wait(
            py,
            Some(&token),
            async move { sb.run(&command, &opts).await },
        )?;
        json(&result)
    }

    /// Start a streamed run.
    #[pyo3(signature = (command, lang, timeout, max_output, env, cwd, user))]
    #[allow(clippy::too_many_arguments)]
    fn run_stream(
        &self,
        py: Python<'_>,
        command: String,
        lang: &str,
        timeout: Option<f64>,
        max_output: Option<&str>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
        user: Option<String>,
    ) -> PyResult<crate::stream::Stream> {
        let mut opts = spec::run_options(lang, timeout, max_output, env, cwd, user)
            .map_err(crate::errors::to_py)?;
        let token = CancellationToken::new();
        opts.cancel = Some(token.clone());
        let sb = self.handle();
        let stream = rt::wait(py, Some(&token), async move {
            sb.commands().run_stream(&command, &opts).await
        })?;
        Ok(crate::stream::Stream::new(stream, token))
    }

    /// Start a detached process with a ring buffer of `buffer` bytes.
    #[pyo3(signature = (command, lang, max_output, env, cwd, user, buffer))]
    #[allow(clippy::too_many_arguments)]
    fn run_detached(
        &self,
        py: Python<'_>,
        command: String,
        lang: &str,
        max_output: Option<&str>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
        user: Option<String>,
        buffer: usize,
    ) -> PyResult<crate::process::Process> {
        let opts = spec::run_options(lang, None, max_output, env, cwd, user)
            .map_err(crate::errors::to_py)?;
        let sb = self.handle();
        let p = rt::wait(py, None, async move {
            sb.commands().run_detached(&command, &opts, buffer).await
        })?;
        Ok(crate::process::Process::new(p))
    }

    fn write_file(&self, py: Python<'_>, path: String, data: Vec<u8>) -> PyResult<()> {
        let sb = self.handle();
        rt::wait(py, None, async move { sb.write_file(&path, data).await })
    }

    fn read_file<'py>(&self, py: Python<'py>, path: String) -> PyResult<Bound<'py, PyBytes>> {
        let sb = self.handle();
        let data = rt::wait(py, None, async move { sb.read_file(&path).await })?;
        Ok(PyBytes::new(py, &data))
    }

    fn list_files(&self, py: Python<'_>, path: String) -> PyResult<String> {
        let sb = self.handle();
        json(&rt::wait(py, None, async move {
            sb.files().list_files(&path).await
        })?)
    }

    fn push(&self, py: Python<'_>, src: String, dst: String) -> PyResult<String> {
        let sb = self.handle();
        json(&rt::wait(
            py,
            None,
            async move { sb.push(&src, &dst).await },
        )?)
    }

    fn pull(&self, py: Python<'_>, src: String, dst: String) -> PyResult<String> {
        let sb = self.handle();
        json(&rt::wait(
            py,
            None,
            async move { sb.pull(&src, &dst).await },
        )?)
    }

    fn info(&self, py: Python<'_>) -> PyResult<String> {
        let sb = self.handle();
        json(&rt::wait(py, None, async move { sb.info().await })?)
    }

    fn snapshot(&self, py: Python<'_>, image: String) -> PyResult<String> {
        let sb = self.handle();
        rt::wait(py, None, async move { sb.snapshot(&image).await })
    }

    /// Fork into `n` copies named `NAME-fork-1`.., or one per name of
    /// `names`: the files are copied; with `processes`, the running
    /// processes too (CRIU, rootful Podman), refused elsewhere unless
    /// `fallback`. Returns the copies and, after a fallback, the refusal.
    /// Each copy is removed when its last handle goes, as a created
    /// sandbox is.
    #[pyo3(signature = (n, names=None, processes=false, fallback=false))]
    fn fork(
        &self,
        py: Python<'_>,
        n: usize,
        names: Option<Vec<String>>,
        processes: bool,
        fallback: bool,
    ) -> PyResult<(Vec<Sandbox>, Option<String>)> {
        let sb = self.handle();
        let options = ForkOptions {
            level: if processes {
                ForkLevel::Process
            } else {
                ForkLevel::Filesystem
            },
            fallback,
        };
        let fork = rt::wait(py, None, async move {
            match names {
                Some(names) => sb.fork(ForkCopies::from(names).with(options)).await,
                None => sb.fork(ForkCopies::from(n).with(options)).await,
            }
        })?;
        let copies = fork.sandboxes.into_iter().map(Sandbox::wrap).collect();
        Ok((copies, fork.refused))
    }

    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let sb = self.handle();
        rt::wait(py, None, async move { sb.stop().await })
    }

    fn resume(&self, py: Python<'_>) -> PyResult<()> {
        let sb = self.handle();
        rt::wait(py, None, async move { sb.resume().await })
    }

    fn reboot(&self, py: Python<'_>, fresh: bool) -> PyResult<()> {
        let mut sb = self.handle();
        let sb = rt::wait(py, None, async move {
            PersistentSandbox::reboot_sandbox(&mut sb, fresh).await?;
            Ok(sb)
        })?;
        *self
            .handle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = sb;
        Ok(())
    }

    /// Stop a persistent sandbox (remove it too with `remove`), remove any
    /// other. Returns "removed" or "stopped".
    fn shutdown(&self, py: Python<'_>, force: bool, remove: bool) -> PyResult<&'static str> {
        let sb = self.handle();
        // The store's shutdown: a removed persistent sandbox's record goes too.
        let done = rt::wait(py, None, async move {
            PersistentSandbox::shutdown_sandbox(&sb, pocketdock::ShutdownOptions { force, remove })
                .await
        })?;
        Ok(match done {
            pocketdock::sandbox::Shutdown::Removed => "removed",
            pocketdock::sandbox::Shutdown::Stopped => "stopped",
        })
    }

    /// Call `f(data: bytes)` with each piece of stdout of streams and detached processes.
    fn on_stdout(&self, f: Py<PyAny>) {
        let f = Arc::new(f);
        self.handle()
            .commands()
            .on_stdout(move |_, d| callbacks::bytes(&f, d));
    }

    /// Call `f(data: bytes)` with each piece of stderr.
    fn on_stderr(&self, f: Py<PyAny>) {
        let f = Arc::new(f);
        self.handle()
            .commands()
            .on_stderr(move |_, d| callbacks::bytes(&f, d));
    }

    /// Call `f(exit_code: int)` when a stream or detached process ends.
    fn on_exit(&self, f: Py<PyAny>) {
        let f = Arc::new(f);
        self.handle()
            .commands()
            .on_exit(move |_, code| callbacks::code(&f, code));
    }

    #[pyo3(signature = (tty, user, cwd, env, buffer, name=None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    fn session(
        &self,
        py: Python<'_>,
        tty: bool,
        user: Option<String>,
        cwd: Option<String>,
        env: Vec<(String, String)>,
        buffer: Option<usize>,
        name: Option<String>,
    ) -> PyResult<crate::session::Session> {
        let opts = pocketdock::sandbox::SessionOptions {
            tty,
            user,
            workdir: cwd,
            env,
            buffer: buffer.unwrap_or(pocketdock::sandbox::DEFAULT_SESSION_BUFFER),
            name,
        };
        crate::session::open(py, self.handle(), opts)
    }

    fn kernel(&self, py: Python<'_>) -> PyResult<crate::kernel::Kernel> {
        let sb = self.handle();
        let k = rt::wait(py, None, async move { sb.kernel().await })?;
        Ok(crate::kernel::Kernel::new(k))
    }
}

/// A persistent sandbox's handle logs its runs into its record (found by
/// the container's `data-path` label), as the command line's do, however
/// it was reached (`attach_container`, `resume_container`).
fn log_runs(sb: &mut Handle, data_path: Option<&str>) {
    let Some(dir) = data_path.map(std::path::Path::new) else {
        return;
    };
    if !SandboxRecord::is_in(dir) {
        return;
    }
    let project = Project::find(dir);
    let logger = RunLogger::new(dir, &project.config.logging, sb.name());
    sb.observe(Arc::new(logger));
}
