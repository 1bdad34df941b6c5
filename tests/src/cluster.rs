//! Access to the project's test Kubernetes control plane.
//!
//! `scripts/cluster up` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
//! KWOK and writes its state under `target/test-cluster/` of the repository. This module reads that
//! state: kubeconfigs for the two identities, the etcd endpoint for compaction, and the file KWOK
//! serves as every pod's log. See `docs/testing.md`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

/// The command that starts the test cluster, as shown in error messages.
pub const START_HINT: &str = "start the test cluster with `scripts/cluster up` from the repository root \
     (check it with `scripts/cluster status`)";

/// Annotation that makes KWOK end a running pod: `"0"` → `Succeeded`, any other number → `Failed`
/// with that exit code (the `pod-exit-by-annotation` stage written by `scripts/cluster`).
pub const EXIT_CODE_ANNOTATION: &str = "pando.test/exit-code";

/// Identities defined in the test cluster's token file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// User `admin` in group `system:masters`: may do anything.
    Admin,
    /// User `pando`, bound only to the ClusterRole in `deploy/kubernetes/rbac.yaml`.
    Pando,
}

impl Identity {
    /// The name of the identity, which is also its kubeconfig's file stem.
    pub fn name(self) -> &'static str {
        match self {
            Identity::Admin => "admin",
            Identity::Pando => "pando",
        }
    }
}

/// Errors from the test-cluster helpers.
///
/// `Debug` prints the same text as `Display` (plus the chain of causes), so that a test's
/// `expect` shows how to fix the problem, e.g. that the cluster must be started.
#[derive(thiserror::Error)]
pub enum ClusterError {
    /// The cluster's state files are missing: it was never started in this checkout.
    #[error("the test cluster is not running ({path} is missing): {START_HINT}")]
    NotRunning {
        /// The missing file.
        path: PathBuf,
    },
    /// The state files exist but the API server does not answer: it is down, or this process
    /// runs outside the cluster's network namespace, where its loopback address is nothing.
    #[error(
        "the test cluster does not answer at {server} ({source}); {}",
        unreachable_hint()
    )]
    Unreachable {
        /// The API server URL from the kubeconfig.
        server: String,
        /// What failed.
        #[source]
        source: kube::Error,
    },
    /// A kubeconfig could not be read or used.
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// An API request failed.
    #[error("Kubernetes API request failed: {0}")]
    Api(#[from] kube::Error),
    /// Reading a state file or running a helper binary failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `etcd-compact` failed.
    #[error("etcd compaction failed: {0}")]
    Compact(String),
    /// Something did not happen in time.
    #[error("timed out after {seconds}s waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The limit.
        seconds: u64,
    },
}

/// What to do when the API server does not answer, depending on where this process runs.
fn unreachable_hint() -> String {
    if std::env::var_os(crate::net::NETNS_VAR).is_none() {
        format!(
            "this process is outside the cluster's network namespace: {}",
            crate::net::EXEC_HINT
        )
    } else {
        "restart it with `scripts/cluster down && scripts/cluster up`".to_string()
    }
}

impl std::fmt::Debug for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")?;
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            write!(f, "\n  caused by: {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

/// The repository root (the parent of the `tests` crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// `target/test-cluster/` of this checkout, where `scripts/cluster` keeps its state.
pub fn state_dir() -> PathBuf {
    repo_root().join("target").join("test-cluster")
}

/// The kubeconfig of `identity`: `target/test-cluster/<identity>.kubeconfig`.
pub fn kubeconfig_path(identity: Identity) -> PathBuf {
    state_dir().join(format!("{}.kubeconfig", identity.name()))
}

/// The file KWOK serves as the log of every pod (`kubectl logs` and `Api::logs`).
pub fn pod_log_path() -> PathBuf {
    state_dir().join("pod-logs").join("pod.log")
}

/// The log text the API server returns for every pod: the messages of [`pod_log_path`], which is
/// in CRI log format (`TIMESTAMP STREAM P|F MESSAGE`), one line each.
pub fn expected_pod_log() -> Result<String, ClusterError> {
    let path = pod_log_path();
    require_file(&path)?;
    let text = std::fs::read_to_string(&path).map_err(|source| ClusterError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    Ok(text
        .lines()
        .filter_map(|line| line.splitn(4, ' ').nth(3))
        .map(|message| format!("{message}\n"))
        .collect())
}

/// The working directory in which KWOK runs `exec` commands.
pub fn exec_dir() -> PathBuf {
    state_dir().join("exec")
}

fn require_file(path: &Path) -> Result<(), ClusterError> {
    if path.is_file() {
        Ok(())
    } else {
        Err(ClusterError::NotRunning {
            path: path.to_path_buf(),
        })
    }
}

/// A client for the test cluster acting as `identity`.
///
/// Fails with [`ClusterError::NotRunning`] (whose message says how to start the cluster) when the
/// cluster was never started, and with [`ClusterError::Unreachable`] when it is not answering.
pub async fn client(identity: Identity) -> Result<Client, ClusterError> {
    let path = kubeconfig_path(identity);
    require_file(&path)?;
    let kubeconfig = Kubeconfig::read_from(&path).map_err(|e| ClusterError::Kubeconfig {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| ClusterError::Kubeconfig {
            path: path.clone(),
            message: e.to_string(),
        })?;
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config)?;
    client
        .apiserver_version()
        .await
        .map_err(|source| ClusterError::Unreachable { server, source })?;
    Ok(client)
}

/// The etcd client endpoint of the running cluster (`target/test-cluster/etcd.endpoint`).
pub fn etcd_endpoint() -> Result<String, ClusterError> {
    let path = state_dir().join("etcd.endpoint");
    require_file(&path)?;
    let text = std::fs::read_to_string(&path).map_err(|source| ClusterError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    Ok(text.trim().to_owned())
}

/// Compacts etcd at its current revision and returns that revision.
///
/// Afterwards a watch from any older resourceVersion of a resource whose watch cache is disabled
/// in the test cluster (`pods`, `configmaps`) ends with `410 Gone`.
pub async fn compact_etcd() -> Result<i64, ClusterError> {
    let endpoint = etcd_endpoint()?;
    let binary = state_dir().join("bin").join("etcd-compact");
    require_file(&binary)?;
    let output = tokio::process::Command::new(&binary)
        .arg(&endpoint)
        .output()
        .await
        .map_err(|source| ClusterError::Io {
            what: format!("running {}", binary.display()),
            source,
        })?;
    if !output.status.success() {
        return Err(ClusterError::Compact(format!(
            "{} {endpoint} exited with {}: {}",
            binary.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout.trim().parse().map_err(|_| {
        ClusterError::Compact(format!(
            "unexpected output from etcd-compact: {:?}",
            stdout.trim()
        ))
    })
}

/// A name unique across test processes and runs: `<prefix>-<pid>-<counter>-<time>`, cut to the
/// 63 characters a DNS label allows. `prefix` should be short, lowercase and DNS-safe.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut name = format!("{prefix}-{}-{n}-{nanos:08x}", std::process::id());
    name.truncate(63);
    name.trim_end_matches('-').to_owned()
}

/// A namespace created for one test. Call [`TestNamespace::delete`] at the end of the test.
pub struct TestNamespace {
    /// The namespace's name.
    pub name: String,
    client: Client,
}

impl std::fmt::Debug for TestNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestNamespace")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl TestNamespace {
    /// Deletes the namespace (without waiting for it to be gone).
    pub async fn delete(&self) -> Result<(), ClusterError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        match api.delete(&self.name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Creates a uniquely named namespace as `client`'s identity and waits (up to 60 s) until its
/// `default` ServiceAccount exists, so that pods can be created in it at once.
pub async fn create_test_namespace(
    client: &Client,
    prefix: &str,
) -> Result<TestNamespace, ClusterError> {
    let name = unique_name(prefix);
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some([("pando.dev/test".to_owned(), "true".to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &ns).await?;
    // The restricted identity cannot read ServiceAccounts; look with the admin identity.
    let admin = self::client(Identity::Admin).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin, &name);
    let limit = Duration::from_secs(60);
    let deadline = tokio::time::Instant::now() + limit;
    while accounts.get_opt("default").await?.is_none() {
        if tokio::time::Instant::now() >= deadline {
            return Err(ClusterError::Timeout {
                what: format!(
                    "the default ServiceAccount of namespace {name} \
                     (is kube-controller-manager running? see target/test-cluster/logs/)"
                ),
                seconds: limit.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(TestNamespace {
        name,
        client: client.clone(),
    })
}

/// The ClusterRole the adapter binds to itself in each namespace it makes
/// (deploy/kubernetes/rbac.yaml).
pub const NAMESPACE_ROLE: &str = "pando-adapter-namespace";
/// The name of that binding.
pub const ADAPTER_BINDING: &str = "pando-adapter";

/// [`create_test_namespace`], then what the adapter does in each namespace it makes: label it
/// Pando's, bind [`NAMESPACE_ROLE`] to User `pando` there, and give it a LimitRange whose
/// default memory limit (64 MiB) lets a test's pod without one past the admission policy's
/// `pods.memory-limit`. Made by the admin, whom the admission policy does not bind, so that a
/// test namespace of any name works; waits (up to 10 s) until `pando` may read the binding
/// through it, i.e. until RBAC's cache has it.
pub async fn create_adapter_namespace(
    client: &Client,
    prefix: &str,
) -> Result<TestNamespace, ClusterError> {
    let ns = create_test_namespace(client, prefix).await?;
    let admin = self::client(Identity::Admin).await?;
    let label = serde_json::json!({ "metadata": { "labels": {
        "app.kubernetes.io/managed-by": "pando" } } });
    Api::<Namespace>::all(admin.clone())
        .patch(
            &ns.name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&label),
        )
        .await?;
    bind_adapter(&ns.name).await?;
    let limits: k8s_openapi::api::core::v1::LimitRange =
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "pando-app" },
            "spec": { "limits": [{ "type": "Container", "default": { "memory": "64Mi" } }] },
        }))
        .map_err(|e| ClusterError::Kubeconfig {
            path: PathBuf::new(),
            message: format!("the test namespace's LimitRange: {e}"),
        })?;
    Api::<k8s_openapi::api::core::v1::LimitRange>::namespaced(admin, &ns.name)
        .create(&PostParams::default(), &limits)
        .await?;
    Ok(ns)
}

/// Binds [`NAMESPACE_ROLE`] to User `pando` in `ns` as the admin (an existing binding is kept),
/// as the adapter binds itself in each namespace it makes, and waits (up to 10 s) until `pando`
/// may read it through it, i.e. until RBAC's cache has it.
pub async fn bind_adapter(ns: &str) -> Result<(), ClusterError> {
    use k8s_openapi::api::rbac::v1::RoleBinding;
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": { "name": ADAPTER_BINDING },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": NAMESPACE_ROLE },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "pando" }],
    }))
    .map_err(|e| ClusterError::Kubeconfig {
        path: PathBuf::new(),
        message: format!("the adapter's binding: {e}"),
    })?;
    let admin = self::client(Identity::Admin).await?;
    match Api::<RoleBinding>::namespaced(admin, ns)
        .create(&PostParams::default(), &binding)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    let pando = Api::<RoleBinding>::namespaced(self::client(Identity::Pando).await?, ns);
    let limit = Duration::from_secs(10);
    let deadline = tokio::time::Instant::now() + limit;
    while let Err(e) = pando.get(ADAPTER_BINDING).await {
        if tokio::time::Instant::now() >= deadline {
            return Err(ClusterError::Timeout {
                what: format!("RBAC to let pando read its binding in {ns} ({e})"),
                seconds: limit.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
