//! The fault API server: a second kube-apiserver on the test cluster's etcd
//! that the fault tests restart, stop and cut (`scripts/cluster
//! restart-fault-apiserver` and friends), so that the other tests, on the
//! main API server, never notice. Also the throttled identity, whose every
//! request goes to an API Priority and Fairness level with no seats of its
//! own, and etcd compaction. See docs/testing.md, "Faults".
//!
//! Fault tests take [`exclusive`] first: one at a time (in this process and
//! across processes), with the fault API server running at the start, and
//! running again at the end on every path, a panic included.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::cluster::{self, ClusterError};

/// Who talks to the fault API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultIdentity {
    /// `admin` (group `system:masters`).
    Admin,
    /// `pando`, bound to `deploy/kubernetes/rbac.yaml`'s `pando-adapter`.
    Pando,
    /// `pando-throttled`: the same role as `pando`, and its requests
    /// in the priority level [`THROTTLED_LEVEL`].
    Throttled,
}

impl FaultIdentity {
    /// The kubeconfig's file stem, less `-fault`.
    pub fn name(self) -> &'static str {
        match self {
            FaultIdentity::Admin => "admin",
            FaultIdentity::Pando => "pando",
            FaultIdentity::Throttled => "pando-throttled",
        }
    }
}

/// The API Priority and Fairness level (and FlowSchema) of the throttled
/// identity: no seats of its own, no borrowing, and `Reject` rather than
/// queueing. The server still runs one request of a level when none of it
/// is running, so a second request at the same time gets 429.
pub const THROTTLED_LEVEL: &str = "pando-throttled";

/// `target/test-cluster/<identity>-fault.kubeconfig`.
pub fn kubeconfig_path(who: FaultIdentity) -> PathBuf {
    cluster::state_dir().join(format!("{}-fault.kubeconfig", who.name()))
}

/// A client for the fault API server as `who`. Without `retry`, kube-rs's
/// own retrying of 429, 503 and 504 is off, so a test sees each answer.
pub async fn client(who: FaultIdentity, retry: bool) -> Result<Client, ClusterError> {
    let path = kubeconfig_path(who);
    if !path.is_file() {
        return Err(ClusterError::NotRunning { path });
    }
    let kubeconfig = Kubeconfig::read_from(&path).map_err(|e| ClusterError::Kubeconfig {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| ClusterError::Kubeconfig {
            path: path.clone(),
            message: e.to_string(),
        })?;
    config.default_retry = retry;
    Ok(Client::try_from(config)?)
}

/// Runs `scripts/cluster ARGS…`; its stderr in the error.
pub async fn script(args: &[&str]) -> Result<(), ClusterError> {
    let script = cluster::repo_root().join("scripts/cluster");
    let what = format!("scripts/cluster {}", args.join(" "));
    let output = tokio::process::Command::new(&script)
        .args(args)
        .output()
        .await
        .map_err(|source| ClusterError::Io {
            what: what.clone(),
            source,
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(ClusterError::Io {
            what: format!("{what} exited with {}", output.status),
            source: std::io::Error::other(String::from_utf8_lossy(&output.stderr).into_owned()),
        })
    }
}

/// How a stop ends the fault API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM: it closes its watches and finishes what it serves.
    Graceful,
    /// SIGKILL: every connection is cut where it is.
    Kill,
}

fn stop_args(verb: &'static str, how: Stop) -> Vec<&'static str> {
    match how {
        Stop::Graceful => vec![verb],
        Stop::Kill => vec![verb, "--kill"],
    }
}

/// Stops the fault API server; returns once its port is closed.
pub async fn stop(how: Stop) {
    script(&stop_args("stop-fault-apiserver", how))
        .await
        .expect("stopping the fault API server");
}

/// Starts the fault API server (if it is not running) and waits for its
/// `/readyz`.
pub async fn start() {
    script(&["start-fault-apiserver"])
        .await
        .expect("starting the fault API server");
}

/// Stops the fault API server and starts it again; returns once it is
/// ready.
pub async fn restart(how: Stop) {
    script(&stop_args("restart-fault-apiserver", how))
        .await
        .expect("restarting the fault API server");
}

/// The right to break the fault API server for the length of a test.
///
/// Dropping it makes sure the server runs again (synchronously: a test
/// that panicked while it was stopped leaves it running for the next).
pub struct FaultGuard {
    _local: tokio::sync::MutexGuard<'static, ()>,
    _file: std::fs::File,
}

impl std::fmt::Debug for FaultGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultGuard").finish_non_exhaustive()
    }
}

impl Drop for FaultGuard {
    fn drop(&mut self) {
        let script = cluster::repo_root().join("scripts/cluster");
        match std::process::Command::new(&script)
            .arg("start-fault-apiserver")
            .output()
        {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "the fault API server could not be started again: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("running {}: {e}", script.display()),
        }
    }
}

/// Waits for the other fault tests (of this process and of any other),
/// then makes sure the fault API server runs (setting it up on a cluster
/// started without it).
pub async fn exclusive() -> FaultGuard {
    static LOCAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let local = LOCAL.lock().await;
    let path = cluster::state_dir().join(".fault-tests.lock");
    let file = tokio::task::spawn_blocking(move || {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
        file.lock()
            .unwrap_or_else(|e| panic!("locking {}: {e}", path.display()));
        file
    })
    .await
    .expect("the lock task");
    start().await;
    FaultGuard {
        _local: local,
        _file: file,
    }
}

/// Compacts etcd (shared by both API servers) at its current revision: a
/// watch from any older version of pods or configmaps is then 410 Gone.
pub async fn compact_etcd() -> i64 {
    cluster::compact_etcd().await.expect("compacting etcd")
}

/// Polls `check` every 200 ms until it returns `Some`, for at most `limit`;
/// panics naming `what` when it never does.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {} s",
            limit.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How many requests of the throttled identity's priority level the fault
/// API server has rejected since it started (its
/// `apiserver_flowcontrol_rejected_requests_total`).
pub async fn throttled_rejections() -> u64 {
    let admin = client(FaultIdentity::Admin, true)
        .await
        .expect("admin client of the fault API server");
    let request = kube::core::Request::new("")
        .get("metrics", &Default::default())
        .expect("a request");
    let text = admin
        .request_text(request)
        .await
        .expect("the fault API server's metrics");
    text.lines()
        .filter(|l| l.starts_with("apiserver_flowcontrol_rejected_requests_total{"))
        .filter(|l| l.contains(&format!("priority_level=\"{THROTTLED_LEVEL}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// Fills namespace `ns` (as admin, on the main API server) with configmaps
/// of 24 MiB in all: a list of them that its client does not read keeps
/// the API server writing, and so keeps the request's seat, since more
/// than the sockets buffer is left to send.
pub async fn fill_with_configmaps(ns: &str) {
    let admin = cluster::client(cluster::Identity::Admin)
        .await
        .expect("admin client");
    let maps: Api<ConfigMap> = Api::namespaced(admin, ns);
    let value = "x".repeat(1 << 20);
    for i in 0..24 {
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("ballast-{i}")),
                ..ObjectMeta::default()
            },
            data: Some([("ballast".to_owned(), value.clone())].into()),
            ..ConfigMap::default()
        };
        maps.create(&PostParams::default(), &map)
            .await
            .expect("creating a ballast configmap");
    }
}

/// A request of the throttled identity that holds its priority level's only
/// seat: a list of [`fill_with_configmaps`]'s namespace whose body is not
/// read. Dropping it closes the connection and frees the seat.
pub struct SeatHolder {
    // The response, its body unread.
    _response: Box<dyn std::any::Any + Send>,
}

impl std::fmt::Debug for SeatHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeatHolder").finish_non_exhaustive()
    }
}

/// Takes the throttled level's seat on the fault API server with a list of
/// `ns` (see [`SeatHolder`]), retrying while another request has it.
pub async fn hold_seat(ns: &str) -> SeatHolder {
    let throttled = client(FaultIdentity::Throttled, false)
        .await
        .expect("a client for pando-throttled");
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    eventually(
        "the throttled level's seat",
        Duration::from_secs(60),
        || {
            let throttled = throttled.clone();
            let path = path.clone();
            async move {
                let request = kube::core::Request::new(path)
                    .list(&Default::default())
                    .expect("a request")
                    .map(kube::client::Body::from);
                let response = throttled.send(request).await.expect("sending the list");
                (response.status().as_u16() == 200).then(|| SeatHolder {
                    _response: Box::new(response),
                })
            }
        },
    )
    .await
}

/// What a test made, removed (as admin, on the main API server) when this
/// is dropped: at the test's end and on every other path, a failed
/// assertion included. Namespaces are deleted without waiting for them to
/// go; PersistentVolumes and directories of the helper's filesystem too.
#[derive(Debug, Default)]
pub struct Leftovers {
    namespaces: Vec<String>,
    volumes: Vec<String>,
    dirs: Vec<PathBuf>,
}

impl Leftovers {
    /// Removes namespace `name` at the end.
    pub fn namespace(&mut self, name: impl Into<String>) {
        self.namespaces.push(name.into());
    }

    /// Removes PersistentVolume `name` at the end.
    pub fn volume(&mut self, name: impl Into<String>) {
        self.volumes.push(name.into());
    }

    /// Removes directory `path` at the end.
    pub fn dir(&mut self, path: impl Into<PathBuf>) {
        self.dirs.push(path.into());
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        for dir in &self.dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
        let namespaces = std::mem::take(&mut self.namespaces);
        let volumes = std::mem::take(&mut self.volumes);
        if namespaces.is_empty() && volumes.is_empty() {
            return;
        }
        // A runtime of its own: this may run while the test's unwinds.
        let done = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async move {
                let admin = cluster::client(cluster::Identity::Admin)
                    .await
                    .map_err(|e| e.to_string())?;
                let dp = kube::api::DeleteParams::default();
                let all: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
                for ns in &namespaces {
                    let _ = all.delete(ns, &dp).await;
                }
                let pvs: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(admin);
                for pv in &volumes {
                    let _ = pvs.delete(pv, &dp).await;
                }
                Ok::<(), String>(())
            })
        })
        .join();
        if let Ok(Err(e)) | Err(e) = done.map_err(|_| "the cleanup panicked".to_string()) {
            eprintln!("cleaning up after the test: {e}");
        }
    }
}
