//! The Kubernetes adapter, loaded in the host against the test cluster as
//! the `pando` identity with `deploy/grants/kubernetes.yaml`, and what its
//! tests need: admin access to look behind it, pod phases to wait for, and
//! a count of the API requests a call made (from the host's audit events).

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    ConfigMap, LimitRange, Namespace, PersistentVolumeClaim, Pod, ResourceQuota, Secret, Service,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use pando_host::types::{
    BundlePlan, BundleRef, DestroyOptions, RegistryCredential, VolumeMount, VolumeSpec,
};
use pando_host::{Adapter, CallContext, Grants, Host};
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::cluster::{self, EXIT_CODE_ANNOTATION, Identity};
use crate::components;

/// The configuration the tests load the adapter with.
pub const CONFIG: &str = r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17"}"#;

/// Generous limit for anything the control plane does asynchronously.
pub const WAIT: Duration = Duration::from_secs(90);

/// The adapter's component: `PANDO_TEST_KUBERNETES_ADAPTER` when set (a build of another
/// revision, to see a test fail without the change it tests), else this checkout's build.
pub fn component() -> std::path::PathBuf {
    match std::env::var_os("PANDO_TEST_KUBERNETES_ADAPTER") {
        Some(path) => path.into(),
        None => components::component("pando_adapter_kubernetes"),
    }
}

/// The host grants the adapter ships with.
pub fn grants() -> Grants {
    let path = components::repo_root().join("deploy/grants/kubernetes.yaml");
    let text = std::fs::read_to_string(&path).expect("reading deploy/grants/kubernetes.yaml");
    Grants::from_text("deploy/grants/kubernetes.yaml", &text).expect("the grants parse")
}

/// The adapter, as `pando`, with [`CONFIG`]. Also starts counting audit
/// events ([`requests`]).
pub async fn load() -> (Adapter, Host) {
    load_with(CONFIG).await
}

/// The adapter, as `pando`, with `config` rather than [`CONFIG`]: e.g. a
/// `node_selector` that keeps a test's pods (and the capacity it reads) on
/// nodes other tests do not use. Also starts counting audit events.
pub async fn load_with(config: &str) -> (Adapter, Host) {
    install_audit_counter();
    crate::probe::load_as_pando(&component(), grants(), config).await
}

/// The adapter, as `pando`, with [`CONFIG`], its reads at any version
/// answered from `cache`. Also starts counting audit events.
pub async fn load_cached(
    cache: std::sync::Arc<pando_host::kubecache::WatchCache>,
) -> (Adapter, Host) {
    install_audit_counter();
    crate::probe::load_as_pando_cached(&component(), grants(), CONFIG, Some(cache)).await
}

/// The shipped grants with the adapter's own binding (`role_bindings`) for
/// user `user` rather than `pando`: an adapter known by another name binds
/// itself by that name.
pub fn grants_for_user(user: &str) -> Grants {
    let path = components::repo_root().join("deploy/grants/kubernetes.yaml");
    let text = std::fs::read_to_string(&path).expect("reading deploy/grants/kubernetes.yaml");
    let line = "      - {kind: User, name: pando}";
    assert!(text.contains(line), "the grants bind the adapter's user");
    let text = text.replace(line, &format!("      - {{kind: User, name: {user}}}"));
    Grants::from_text("deploy/grants/kubernetes.yaml", &text).expect("the grants parse")
}

/// The adapter, as whoever `client` acts for (e.g. `pando` on the fault
/// API server, [`crate::faults`]), with `config`. Also starts counting
/// audit events.
pub async fn load_with_client(config: &str, client: Client) -> (Adapter, Host) {
    load_with_client_grants(config, client, grants()).await
}

/// [`load_with_client`] with `grants`.
pub async fn load_with_client_grants(
    config: &str,
    client: Client,
    grants: Grants,
) -> (Adapter, Host) {
    install_audit_counter();
    let host = Host::builder()
        .cache_dir(crate::probe::shared_cache())
        .build()
        .expect("host builds");
    let adapter = host
        .load_file(
            &component(),
            pando_host::LoadOptions {
                grants,
                config: config.into(),
                kubernetes: Some(client),
                ..pando_host::LoadOptions::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("the Kubernetes adapter loads: {e}"));
    (adapter, host)
}

/// All audit events since `mark`, whatever namespace they name (for calls
/// that read cluster-wide, such as `capacity`).
pub fn all_requests(mark: usize) -> Vec<Request> {
    let all = AUDIT.lock().map(|a| a.clone()).unwrap_or_default();
    all.into_iter().skip(mark).collect()
}

/// A call context with a generous deadline.
pub fn ctx() -> CallContext {
    CallContext::default().with_timeout(Duration::from_secs(120))
}

/// The admin client, to look behind the adapter.
pub async fn admin() -> Client {
    cluster::client(Identity::Admin)
        .await
        .expect("admin client")
}

/// Removes an app, volumes and namespace included: through the adapter,
/// then as admin in case the adapter failed.
pub async fn cleanup(adapter: &Adapter, id: &str) {
    let _ = adapter
        .destroy(
            &ctx(),
            &BundleRef { id: id.into() },
            DestroyOptions {
                keep_volumes: false,
            },
        )
        .await;
    let ns: Api<Namespace> = Api::all(admin().await);
    let _ = ns
        .delete(&format!("pando-{id}"), &DeleteParams::default())
        .await;
}

/// Waits until pod `name` of `ns` is in `phase`, and returns it.
pub async fn wait_phase(ns: &str, name: &str, phase: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(admin().await, ns);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(pod) = pods.get_opt(name).await.expect("reading the pod")
            && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase)
        {
            return pod;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "pod {ns}/{name} did not reach {phase} within {} s",
            WAIT.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Ends a running pod with `code` through KWOK (as the admin), and waits
/// for its final phase.
pub async fn exit_pod(ns: &str, name: &str, code: i32) -> Pod {
    let pods: Api<Pod> = Api::namespaced(admin().await, ns);
    let patch = serde_json::json!({ "metadata": { "annotations": { EXIT_CODE_ANNOTATION: code.to_string() } } });
    pods.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotating the pod");
    wait_phase(ns, name, if code == 0 { "Succeeded" } else { "Failed" }).await
}

/// A unique app id, short enough for its namespace.
pub fn id(prefix: &str) -> String {
    // An app id leaves room for `pando-` in a 63-character namespace.
    let mut id = cluster::unique_name(prefix);
    id.truncate(50);
    id.trim_end_matches('-').to_owned()
}

/// Pull credentials for a registry that does not exist.
pub fn credentials() -> Vec<RegistryCredential> {
    vec![RegistryCredential {
        registry: "registry.example.com".into(),
        username: "pando".into(),
        password: "s3cret".into(),
    }]
}

/// The plan with a 1 GiB volume `volume` mounted by its first workload.
pub fn with_volume(mut p: BundlePlan, volume: &str) -> BundlePlan {
    p.volumes.push(VolumeSpec {
        name: volume.into(),
        size_bytes: Some(1 << 30),
    });
    p.workloads[0].mounts.push(VolumeMount {
        volume: volume.into(),
        path: "/data".into(),
        read_only: false,
    });
    p
}

/// Creates (as admin) a 1 GiB `hostPath` PersistentVolume bound ahead to
/// claim `claim` of namespace `ns`, so the claim binds on a cluster without
/// a provisioner; its name. Delete it with [`delete_pv`].
pub async fn bound_pv(ns: &str, claim: &str) -> String {
    use k8s_openapi::api::core::v1::{
        HostPathVolumeSource, ObjectReference, PersistentVolume, PersistentVolumeSpec,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let name = format!("pv-{ns}-{claim}");
    let pv = PersistentVolume {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some([("storage".to_string(), Quantity("1Gi".into()))].into()),
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            persistent_volume_reclaim_policy: Some("Delete".into()),
            host_path: Some(HostPathVolumeSource {
                path: "/tmp/pando-test-pv".into(),
                type_: None,
            }),
            claim_ref: Some(ObjectReference {
                namespace: Some(ns.into()),
                name: Some(claim.into()),
                ..ObjectReference::default()
            }),
            ..PersistentVolumeSpec::default()
        }),
        ..PersistentVolume::default()
    };
    Api::<PersistentVolume>::all(admin().await)
        .create(&Default::default(), &pv)
        .await
        .expect("creating the PersistentVolume");
    name
}

/// Deletes a PersistentVolume [`bound_pv`] made; gone already is fine.
pub async fn delete_pv(name: &str) {
    let pvs: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(admin().await);
    let _ = pvs.delete(name, &DeleteParams::default()).await;
}

/// Waits until the adapter observes volume `volume` of app `id` ready.
pub async fn wait_volume_ready(adapter: &Adapter, id: &str, volume: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let seen = adapter
            .observe(&ctx(), &BundleRef { id: id.into() })
            .await
            .expect("observe");
        if seen.volumes.iter().any(|v| v.name == volume && v.ready) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "volume {volume} of {id} did not bind: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Every object's `resourceVersion` in the namespace (and the namespace's),
/// keyed by kind and name: each kind the adapters write there.
pub async fn versions(client: &Client, ns: &str) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    let lp = ListParams::default();
    macro_rules! add {
        ($kind:ty, $label:literal) => {
            for o in Api::<$kind>::namespaced(client.clone(), ns)
                .list(&lp)
                .await
                .expect("listing")
                .items
            {
                all.insert(
                    format!("{}/{}", $label, o.metadata.name.unwrap_or_default()),
                    o.metadata.resource_version.unwrap_or_default(),
                );
            }
        };
    }
    add!(Pod, "pod");
    add!(Service, "service");
    add!(Secret, "secret");
    add!(ConfigMap, "configmap");
    add!(NetworkPolicy, "networkpolicy");
    add!(PersistentVolumeClaim, "pvc");
    // Pando's binding and the adapter's own, the quota and the limit range: made by both
    // adapters, so an apply that rewrites one is seen.
    add!(RoleBinding, "rolebinding");
    add!(ResourceQuota, "resourcequota");
    add!(LimitRange, "limitrange");
    let n = Api::<Namespace>::all(client.clone())
        .get(ns)
        .await
        .expect("the namespace");
    all.insert(
        format!("namespace/{ns}"),
        n.metadata.resource_version.unwrap_or_default(),
    );
    all
}

/// A pod's uid.
pub fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// One Kubernetes request the host sent for an adapter (its audit event).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// The import function (`send`, `watch`, `exec`).
    pub call: String,
    /// `get`, `list`, `create`, `update`, `patch`, `delete` …
    pub verb: String,
    /// As grants spell it.
    pub resource: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    /// Empty for lists.
    pub name: String,
    /// Answered by the host's watch-fed cache, not the API server.
    pub cached: bool,
}

impl Request {
    /// Whether it changes something.
    pub fn is_write(&self) -> bool {
        !matches!(self.verb.as_str(), "get" | "list" | "watch")
    }
}

static AUDIT: Mutex<Vec<Request>> = Mutex::new(Vec::new());

/// Audit events and their bytes (every field's value), by adapter name.
static AUDIT_VOLUME: Mutex<BTreeMap<String, (u64, u64)>> = Mutex::new(BTreeMap::new());

struct AuditCounter;

/// What one audit event weighs, and whose it is.
#[derive(Default)]
struct Weight {
    adapter: String,
    bytes: u64,
}

impl Visit for Weight {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "adapter" {
            self.adapter = value.to_owned();
        }
        self.bytes += (field.name().len() + value.len()) as u64;
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "adapter" {
            self.adapter = text.trim_matches('"').to_owned();
        }
        self.bytes += (field.name().len() + text.len()) as u64;
    }
}

/// The audit events written for adapter `name` so far, and their bytes
/// (every field's name and value): what an audit trail would store. The
/// counter must be installed ([`install_audit_counter`]) before the calls.
pub fn audit_volume(name: &str) -> (u64, u64) {
    AUDIT_VOLUME
        .lock()
        .map(|v| v.get(name).copied().unwrap_or_default())
        .unwrap_or_default()
}

impl Visit for Request {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "cached" {
            self.cached = value;
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.record(field, value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record(field, format!("{value:?}"));
    }
}

impl Request {
    fn record(&mut self, field: &Field, value: String) {
        match field.name() {
            "call" => self.call = value,
            "verb" => self.verb = value,
            "resource" => self.resource = value,
            "namespace" => self.namespace = value,
            "name" => self.name = value,
            _ => {}
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for AuditCounter {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == "pando_host::audit" {
            let mut request = Request::default();
            event.record(&mut request);
            if let Ok(mut all) = AUDIT.lock() {
                all.push(request);
            }
            let mut weight = Weight::default();
            event.record(&mut weight);
            if let Ok(mut volume) = AUDIT_VOLUME.lock() {
                let entry = volume.entry(weight.adapter).or_default();
                entry.0 += 1;
                entry.1 += weight.bytes;
            }
        }
    }
}

/// Installs the audit counter as the process's subscriber, once, and with
/// `RUST_LOG` set, a log of the host's and the adapter's events in the
/// test's captured output (`--nocapture` shows it as it happens).
pub fn install_audit_counter() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let log = tracing_subscriber::EnvFilter::try_from_default_env()
            .ok()
            .map(|filter| {
                tracing_subscriber::fmt::layer()
                    .with_test_writer()
                    .with_filter(filter)
            });
        let _ = tracing_subscriber::registry()
            .with(AuditCounter)
            .with(log)
            .try_init();
    });
}

/// How many audit events were recorded so far: pass it to [`requests`].
pub fn audit_mark() -> usize {
    AUDIT.lock().map(|a| a.len()).unwrap_or(0)
}

/// The requests about namespace `ns` (in it, or the namespace itself)
/// since `mark`. Tests run in parallel, so a unique namespace tells one
/// test's requests from another's; the adapter's calls in one test are
/// sequential, so a mark taken before a call starts that call's window.
pub fn requests(mark: usize, ns: &str) -> Vec<Request> {
    let all = AUDIT.lock().map(|a| a.clone()).unwrap_or_default();
    all.into_iter()
        .skip(mark)
        .filter(|r| r.namespace == ns || r.name == ns)
        .collect()
}

/// The pods of namespace `ns` whose log the host opened since `mark`, by name: which pod a
/// `logs` call read. KWOK serves one file as every pod's log, so the bytes cannot say it.
pub fn log_reads(mark: usize, ns: &str) -> Vec<String> {
    requests(mark, ns)
        .into_iter()
        .filter(|r| r.resource == "pods/log" && r.namespace == ns)
        .map(|r| r.name)
        .collect()
}

/// Holds the edge namespace (`pando-edge`) for one test at a time across test binaries
/// (`adapter_kubernetes_edge`, `real_node_edge`): an edge removed by one would otherwise take
/// the namespace from under another's, and "the namespace goes with the last edge" would see
/// the other's edge. An exclusive lock on a file of the cluster's state, released on drop.
pub async fn edge_namespace_lock() -> std::fs::File {
    state_lock("edge-namespace.lock").await
}

/// Holds the NetworkPolicy canary's namespace (`pando-canary`) for one test at a time across
/// test binaries: a test that deletes or edits the canary's policy would otherwise fail another's
/// health check, and KWOK's and the real node's configurations replace each other's pods.
pub async fn canary_lock() -> std::fs::File {
    state_lock("canary.lock").await
}

/// An exclusive lock on file `name` of the cluster's state, released on drop.
async fn state_lock(name: &str) -> std::fs::File {
    let path = cluster::state_dir().join(name);
    tokio::task::spawn_blocking(move || {
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
    .expect("the lock's task")
}
