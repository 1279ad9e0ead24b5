//! A Kubernetes API test server: the pod (with watches), exec and
//! NetworkPolicy endpoints the Kubernetes backend uses, with real Kubernetes JSON shapes, over plain HTTP on
//! 127.0.0.1. Each pod is a real engine container, each exec a real engine
//! exec. No real cluster runs here: this is what the backend is tested
//! against (docs/kubernetes.md). Shared by test targets through `#[path]`.

#![allow(dead_code)]

mod exec;
mod network;
mod pods;
mod watch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pocketdock::Engine;
use serde_json::Value;

/// The label on every container the server makes, with its id as value.
pub const LABEL: &str = "pocketdock.kube-api";

/// One pod: its JSON as created, and the container behind it.
#[derive(Debug, Clone)]
struct PodEntry {
    pod: Value,
    container: String,
    /// A status set by a fault (an eviction), over the container's.
    forced: Option<Value>,
    /// Reported unschedulable until then (a fault).
    unscheduled_until: Option<Instant>,
}

impl PodEntry {
    fn new(pod: Value, container: String) -> PodEntry {
        PodEntry {
            pod,
            container,
            forced: None,
            unscheduled_until: None,
        }
    }
}

/// What the handlers share.
#[derive(Debug)]
struct State {
    engine: Engine,
    id: String,
    pods: Mutex<BTreeMap<(String, String), PodEntry>>,
    /// NetworkPolicies as created.
    policies: Mutex<BTreeMap<(String, String), Value>>,
    /// The last resource version handed out.
    version: AtomicU64,
    /// Every pod event so far, for watches that start from a version.
    events: Mutex<Vec<watch::Event>>,
    /// New pod events, for running watches.
    bus: tokio::sync::broadcast::Sender<watch::Event>,
    /// Fault: new pods stay unschedulable this long (`None`: no fault).
    pending: Mutex<Option<Duration>>,
    /// Fault: the next pod create answers 500.
    fail_create: AtomicBool,
    /// Fault: exec streams close before their status.
    drop_exec: AtomicBool,
    /// Offer only v4 (no close-stdin channel).
    v4_only: AtomicBool,
}

impl State {
    fn pods(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), PodEntry>> {
        self.pods
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running server. Dropping it stops it; its containers are removed by
/// the caller's label cleanup (`LABEL=id()`).
pub struct KubeApi {
    state: Arc<State>,
    port: u16,
    dir: tempfile::TempDir,
    /// The caller's engine, for calls from the test's runtime.
    engine: Engine,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl KubeApi {
    /// Serve on a random port, pods as containers on `engine`.
    #[allow(clippy::unused_async)]
    pub async fn start(engine: &Engine) -> KubeApi {
        // The server runs on a runtime of its own, so that a test thread
        // blocked in a drop guard (which calls the server) cannot stall it.
        let state = Arc::new(State {
            engine: engine.detached(),
            id: format!("{:08x}", fastrand::u32(..)),
            pods: Mutex::default(),
            policies: Mutex::default(),
            version: AtomicU64::new(1),
            events: Mutex::default(),
            bus: tokio::sync::broadcast::channel(256).0,
            pending: Mutex::default(),
            fail_create: AtomicBool::new(false),
            drop_exec: AtomicBool::new(false),
            v4_only: AtomicBool::new(false),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = router(state.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                // As an API server does: small exec frames are not held
                // back by Nagle's algorithm waiting for a delayed ACK.
                let listener = axum::serve::ListenerExt::tap_io(
                    tokio::net::TcpListener::from_std(listener).unwrap(),
                    |tcp| {
                        let _ = tcp.set_nodelay(true);
                    },
                );
                let serve = axum::serve(listener, app);
                tokio::select! {
                    _ = serve => {}
                    _ = stopped => {}
                }
            });
        });
        let dir = tempfile::tempdir().unwrap();
        let api = KubeApi {
            state,
            port,
            dir,
            engine: engine.clone(),
            stop: Some(stop),
        };
        std::fs::write(api.kubeconfig(), api.kubeconfig_text()).unwrap();
        api
    }

    /// The label (`key=value`) on this server's containers.
    pub fn label(&self) -> String {
        format!("{LABEL}={}", self.state.id)
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A kubeconfig for this server (no auth, namespace `pdtest`).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    fn kubeconfig_text(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {}\n\
             contexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n    namespace: pdtest\n\
             current-context: test\nusers:\n- name: test\n  user: {{}}\n",
            self.url()
        )
    }

    /// A pod as the server holds it (its JSON as created), `None` if none.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        self.state
            .pods()
            .get(&(namespace.to_string(), name.to_string()))
            .map(|p| p.pod.clone())
    }

    /// The container behind a pod.
    pub fn container_of(&self, namespace: &str, name: &str) -> Option<String> {
        self.state
            .pods()
            .get(&(namespace.to_string(), name.to_string()))
            .map(|p| p.container.clone())
    }

    /// A NetworkPolicy as the server holds it, `None` if none.
    pub fn network_policy(&self, namespace: &str, name: &str) -> Option<Value> {
        lock(&self.state.policies)
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// Fault: delete a pod behind the client's back (watchers see it
    /// DELETED, then its container goes).
    pub async fn delete_pod(&self, namespace: &str, name: &str) {
        let entry = self
            .state
            .pods()
            .remove(&(namespace.to_string(), name.to_string()));
        if let Some(e) = entry {
            watch::publish(&self.state, "DELETED", namespace, e.pod.clone());
            if !e.container.is_empty() {
                let _ = self.engine.remove_container(&e.container, true).await;
            }
        }
    }

    /// Fault: evict a pod as a kubelet under pressure does: phase Failed,
    /// reason Evicted (watchers see it), then its container is killed.
    pub async fn evict_pod(&self, namespace: &str, name: &str, message: &str) {
        let status =
            serde_json::json!({"phase": "Failed", "reason": "Evicted", "message": message});
        let evicted = {
            let mut pods = self.state.pods();
            let Some(e) = pods.get_mut(&(namespace.to_string(), name.to_string())) else {
                return;
            };
            e.forced = Some(status.clone());
            let mut pod = e.pod.clone();
            pod["status"] = status;
            (pod, e.container.clone())
        };
        let (pod, container) = evicted;
        watch::publish(&self.state, "MODIFIED", namespace, pod);
        if !container.is_empty() {
            let _ = self.engine.kill_container(&container, "KILL").await;
        }
    }

    /// Fault: pods created from now on are unschedulable for `how_long`
    /// (`None`: for good), then run.
    pub fn keep_pending(&self, how_long: Option<Duration>) {
        // A day is for good, as far as a test is concerned.
        *lock(&self.state.pending) = Some(how_long.unwrap_or(Duration::from_hours(24)));
    }

    /// Pods created from now on are scheduled at once again.
    pub fn schedule_at_once(&self) {
        *lock(&self.state.pending) = None;
    }

    /// Fault: the next pod create answers 500.
    pub fn fail_next_create(&self) {
        self.state.fail_create.store(true, Ordering::SeqCst);
    }

    /// Fault: exec streams close without a status.
    pub fn drop_exec_streams(&self, on: bool) {
        self.state.drop_exec.store(on, Ordering::SeqCst);
    }

    /// Speak only `v4.channel.k8s.io` on exec.
    pub fn v4_only(&self, on: bool) {
        self.state.v4_only.store(on, Ordering::SeqCst);
    }
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A lock, its data whole even after a panic elsewhere.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn router(state: Arc<State>) -> axum::Router {
    use axum::routing::get;
    const POLICIES: &str = "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies";
    axum::Router::new()
        .route(POLICIES, get(network::list).post(network::create))
        .route(
            &format!("{POLICIES}/{{name}}"),
            get(network::get).delete(network::delete),
        )
        .route(
            "/api/v1/namespaces/{ns}/pods",
            get(pods::list).post(pods::create),
        )
        .route(
            "/api/v1/namespaces/{ns}/pods/{name}",
            get(pods::get).delete(pods::delete),
        )
        .route("/api/v1/namespaces/{ns}/pods/{name}/exec", get(exec::exec))
        .with_state(state)
}

/// A Kubernetes `Status` reply.
fn status(code: u16, reason: &str, message: &str) -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    });
    (
        axum::http::StatusCode::from_u16(code).unwrap(),
        axum::Json(body),
    )
        .into_response()
}
