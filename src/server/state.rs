//! What the handlers share: the engine, the project, the jobs this server
//! runs (their cancel tokens and a signal that their history grew), and
//! the runs index.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ServerConfig;
use crate::backend::Backend;
use crate::project::Project;
use crate::store::{JobIndex, Store};

/// A job this server runs.
#[derive(Debug, Clone)]
pub struct LiveJob {
    /// Cancels it as Ctrl-C would.
    pub cancel: CancellationToken,
    /// Bumped after each event the recorder has written.
    pub grew: watch::Receiver<u64>,
}

/// The server's shared state.
#[derive(Debug)]
pub struct State {
    /// What jobs and sandboxes run on.
    pub backend: Backend,
    /// The project served.
    pub project: Project,
    /// Its store: the job records served.
    pub store: Store,
    /// The bearer token, when one is required.
    pub token: Option<String>,
    /// The sandbox `serve --sandbox NAME` binds: served at `/exec`, `/vars`, `/var/{var}`.
    pub sandbox: Option<String>,
    /// The host environment for manifests' `env:` names.
    pub host_env: HashMap<String, String>,
    /// Fires when the server stops: streams end.
    pub stop: CancellationToken,
    /// Jobs running in this process, by job id.
    jobs: Mutex<HashMap<String, LiveJob>>,
    /// Their tasks, awaited on shutdown.
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The jobs list's index.
    pub index: Mutex<JobIndex>,
}

impl State {
    /// State for `config` on `backend`.
    #[must_use]
    pub fn new(backend: Backend, config: ServerConfig, stop: CancellationToken) -> State {
        State {
            backend,
            store: Store::open(&config.project),
            project: config.project,
            token: config.token,
            sandbox: config.sandbox,
            host_env: config.host_env,
            stop,
            jobs: Mutex::new(HashMap::new()),
            tasks: Mutex::new(Vec::new()),
            index: Mutex::new(JobIndex::default()),
        }
    }

    /// The live job `id`, when this server runs it.
    pub fn live(&self, id: &str) -> Option<LiveJob> {
        lock(&self.jobs).get(id).cloned()
    }

    /// Note a job started by this server.
    pub fn add_live(&self, id: String, job: LiveJob) {
        lock(&self.jobs).insert(id, job);
    }

    /// Forget a job that ended.
    pub fn remove_live(&self, id: &str) {
        lock(&self.jobs).remove(id);
    }

    /// Keep a job's task, to await it on shutdown.
    pub fn keep_task(&self, task: JoinHandle<()>) {
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    /// Let running jobs finish for `timeout`, then cancel the rest and wait
    /// for them to release their sandboxes and close their records.
    pub async fn drain(&self, timeout: Duration) {
        let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&self.tasks));
        let all = futures_util::future::join_all(tasks);
        tokio::pin!(all);
        if tokio::time::timeout(timeout, &mut all).await.is_ok() {
            return;
        }
        for job in lock(&self.jobs).values() {
            job.cancel.cancel();
        }
        all.await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Shared state as handlers take it.
pub type Shared = Arc<State>;
