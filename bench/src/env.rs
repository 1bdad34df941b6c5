//! What the benchmarks run against: the built components, the test
//! cluster's identities, grants, configurations, and the bench's own
//! scratch directory under `target/bench/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use kube::Client;
use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use pando_host::{Adapter, EngineSettings, Grants, Host, LoadOptions};

use crate::roundtrips::{CountLayer, RoundTrips};

/// The configuration the Kubernetes adapter runs with in every benchmark:
/// the test cluster's ranges and the reference's default request budget
/// (5 requests a second, burst 10).
pub const KUBERNETES_CONFIG: &str = r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17", "api_qps": 5, "api_burst": 10}"#;

/// Grants for kube-probe: reading namespace `default` (the 3-round-trip
/// call) and the bench's log pod. The rate is set so high that it never
/// throttles: those benchmarks measure the host's overhead, not a budget.
pub const PROBE_GRANTS: &str = r#"
kubernetes:
  rate: {qps: 1000000, burst: 1000000}
  max_body_bytes: 65536
  rules:
  - verbs: [get]
    resources: [namespaces]
    cluster: true
    names: [default]
  - verbs: [get, list]
    resources: [pods, pods/log]
    namespaces: ["pando-bench-*"]
"#;

/// Grants for kube-probe's writes (the `kube-write` benchmark): creates
/// and patches of pods and ConfigMaps in the bench's namespaces, pods held
/// to the baseline profile by the object rules. Kept apart from
/// [`PROBE_GRANTS`] so the read benchmarks' grant checks stay as they were.
pub const WRITE_PROBE_GRANTS: &str = r#"
kubernetes:
  rate: {qps: 1000000, burst: 1000000}
  max_body_bytes: 65536
  rules:
  - verbs: [create, patch]
    resources: [pods, configmaps]
    namespaces: ["pando-bench-*"]
  objects:
    pods:
    - namespaces: ["*"]
      profile: baseline
"#;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.to_path_buf())
}

/// `target/bench/`: the bench's scratch space (compile caches, the log
/// file KWOK serves).
pub fn scratch_dir() -> Result<PathBuf> {
    let dir = repo_root().join("target/bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// The compile cache the benchmarks load from (a hit after the first load).
pub fn cache_dir() -> Result<PathBuf> {
    Ok(scratch_dir()?.join("compile-cache"))
}

/// A built component, by crate name with underscores.
pub fn component(name: &str) -> Result<PathBuf> {
    let path = repo_root()
        .join("target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"));
    if !path.is_file() {
        bail!(
            "{} is missing: build the components with `scripts/build-components`",
            path.display()
        );
    }
    Ok(path)
}

/// The Kubernetes adapter's component.
pub fn kubernetes_adapter() -> Result<PathBuf> {
    component("pando_adapter_kubernetes")
}

/// The kube-probe test component.
pub fn kube_probe() -> Result<PathBuf> {
    component("pando_kube_probe")
}

/// The grants the Kubernetes adapter ships with (rate 5/s, burst 10).
pub fn kubernetes_grants() -> Result<Grants> {
    let path = repo_root().join("deploy/grants/kubernetes.yaml");
    Ok(Grants::from_path(&path)?)
}

/// The grants for kube-probe ([`PROBE_GRANTS`]).
pub fn probe_grants() -> Result<Grants> {
    Ok(Grants::from_text("bench probe grants", PROBE_GRANTS)?)
}

/// The grants for kube-probe's writes ([`WRITE_PROBE_GRANTS`]).
pub fn write_probe_grants() -> Result<Grants> {
    Ok(Grants::from_text(
        "bench probe write grants",
        WRITE_PROBE_GRANTS,
    )?)
}

/// The test cluster's identities.
#[derive(Debug, Clone, Copy)]
pub enum Identity {
    /// `system:masters`: sets up and cleans up.
    Admin,
    /// The adapter's restricted identity (`deploy/kubernetes/rbac.yaml`).
    Pando,
}

/// A client for `identity` of the test cluster, checked with
/// `GET /version`.
pub async fn client(identity: Identity) -> Result<Client> {
    checked(ClientBuilder::try_from(config(identity).await?)?.build()).await
}

/// A client for `identity` that counts the requests it sends (all who
/// share a clone of it count into the same [`RoundTrips`]).
pub async fn counted_client(identity: Identity) -> Result<(Client, Arc<RoundTrips>)> {
    let counts = Arc::new(RoundTrips::default());
    let builder = ClientBuilder::try_from(config(identity).await?)?;
    let client = builder.with_layer(&CountLayer(counts.clone())).build();
    Ok((checked(client).await?, counts))
}

/// The configuration of `identity`'s kubeconfig.
async fn config(identity: Identity) -> Result<kube::Config> {
    let name = match identity {
        Identity::Admin => "admin",
        Identity::Pando => "pando",
    };
    let path = repo_root().join(format!("target/test-cluster/{name}.kubeconfig"));
    if !path.is_file() {
        bail!(
            "{} is missing: start the test cluster with `scripts/cluster up`",
            path.display()
        );
    }
    let kubeconfig =
        Kubeconfig::read_from(&path).with_context(|| format!("reading {}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("using {}", path.display()))
}

/// `client`, once it answers `GET /version`.
async fn checked(client: Client) -> Result<Client> {
    client.apiserver_version().await.with_context(
        || "the test cluster does not answer; check it with `scripts/cluster status`",
    )?;
    Ok(client)
}

/// A host whose compile cache is the bench's.
pub fn host() -> Result<Host> {
    host_with_slots(None)
}

/// [`host`] with `slots` engine slots, or the default number without.
pub fn host_with_slots(slots: Option<u32>) -> Result<Host> {
    let mut builder = Host::builder().cache_dir(cache_dir()?);
    if let Some(slots) = slots {
        builder = builder.engine(EngineSettings {
            total_instances: slots,
            ..EngineSettings::default()
        });
    }
    Ok(builder.build()?)
}

/// Loads `component` in `host` with `options`, naming the component in
/// the error.
pub async fn load(host: &Host, component: &Path, options: LoadOptions) -> Result<Adapter> {
    host.load_file(component, options)
        .await
        .with_context(|| format!("loading {}", component.display()))
}

/// The Kubernetes probe with the probe's grants, reaching the cluster
/// through `client`.
pub async fn load_probe(host: &Host, client: Client) -> Result<Adapter> {
    load_probe_with(host, client, probe_grants()?).await
}

/// The Kubernetes probe with `grants`, reaching the cluster through
/// `client`.
pub async fn load_probe_with(host: &Host, client: Client, grants: Grants) -> Result<Adapter> {
    load_probe_cached(host, client, grants, None).await
}

/// The Kubernetes probe with `grants`, reaching the cluster through
/// `client`, its reads that allow any version answered from `cache` if
/// given.
pub async fn load_probe_cached(
    host: &Host,
    client: Client,
    grants: Grants,
    cache: Option<Arc<pando_host::kubecache::WatchCache>>,
) -> Result<Adapter> {
    load(
        host,
        &kube_probe()?,
        LoadOptions {
            grants,
            kubernetes: Some(client),
            kubernetes_cache: cache,
            ..LoadOptions::default()
        },
    )
    .await
}

/// The Kubernetes adapter with [`KUBERNETES_CONFIG`] and its shipped
/// grants, reaching the cluster through `client` if given.
pub async fn load_kubernetes(host: &Host, client: Option<Client>) -> Result<Adapter> {
    load(host, &kubernetes_adapter()?, kubernetes_options(client)?).await
}

/// What [`load_kubernetes`] loads with.
fn kubernetes_options(client: Option<Client>) -> Result<LoadOptions> {
    Ok(LoadOptions {
        grants: kubernetes_grants()?,
        config: KUBERNETES_CONFIG.into(),
        kubernetes: client,
        ..LoadOptions::default()
    })
}

/// A watch-fed cache on `client` that has listed what it watches, as in a
/// host that has run for a while.
pub async fn synced_cache(client: &Client) -> Result<Arc<pando_host::kubecache::WatchCache>> {
    let cache = pando_host::kubecache::WatchCache::start(
        client.clone(),
        pando_host::kubecache::CacheOptions::default(),
    )?;
    anyhow::ensure!(
        cache.wait_synced(std::time::Duration::from_secs(120)).await,
        "the watch-fed cache did not list within 120 s"
    );
    Ok(cache)
}

/// The Kubernetes adapter as [`load_kubernetes`] loads it, its reads that
/// allow any version answered from `cache`.
pub async fn load_kubernetes_cached(
    host: &Host,
    client: Client,
    cache: Arc<pando_host::kubecache::WatchCache>,
) -> Result<Adapter> {
    let options = LoadOptions {
        kubernetes_cache: Some(cache),
        ..kubernetes_options(Some(client))?
    };
    load(host, &kubernetes_adapter()?, options).await
}

/// The Kubernetes adapter as [`load_kubernetes`] loads it, with no request
/// budget on either side: the grants' rate and the adapter's own
/// `api_qps`/`api_burst` lifted. For benchmarks of what a call costs when
/// the budget is not what they measure; kube-rs, their baseline, has none.
pub async fn load_kubernetes_unbudgeted(host: &Host, client: Client) -> Result<Adapter> {
    load(
        host,
        &kubernetes_adapter()?,
        LoadOptions {
            grants: unbudgeted_grants(kubernetes_grants()?),
            config: unbudgeted(KUBERNETES_CONFIG)?,
            kubernetes: Some(client),
            ..LoadOptions::default()
        },
    )
    .await
}

/// `grants` with their Kubernetes rate so high it never throttles.
pub fn unbudgeted_grants(mut grants: Grants) -> Grants {
    if let Some(k) = grants.kubernetes.as_mut() {
        k.rate.qps = 1e6;
        k.rate.burst = 1_000_000;
    }
    grants
}

/// `config` with the adapter's own request budget as wide as its schema
/// allows.
pub fn unbudgeted(config: &str) -> Result<String> {
    let mut value: serde_json::Value = serde_json::from_str(config)?;
    let Some(fields) = value.as_object_mut() else {
        bail!("the adapter's configuration is not a JSON object: {config}");
    };
    fields.insert("api_qps".into(), u32::MAX.into());
    fields.insert("api_burst".into(), u32::MAX.into());
    Ok(value.to_string())
}

/// The native twin of a loaded Kubernetes adapter: the same crate compiled
/// for this machine, configured the same way.
pub fn native_kubernetes() -> Result<pando_adapter_kubernetes::KubernetesAdapter> {
    use pando_adapter_sdk::Adapter as _;
    pando_adapter_kubernetes::KubernetesAdapter::configure(KUBERNETES_CONFIG)
        .map_err(|e| anyhow::anyhow!("configuring the native adapter: {e:?}"))
}

/// The adapter's per-namespace role (`deploy/kubernetes/rbac.yaml`): what `pando` may do in a
/// namespace once bound there.
const NAMESPACE_ROLE: &str = "pando-adapter-namespace";
/// The binding's name, as the adapter names its own.
const ADAPTER_BINDING: &str = "pando-adapter";

/// Sets `ns` up as the adapter sets up a namespace it makes, as the admin: binds the
/// adapter's namespace role to User `pando` (cluster-wide `pando` may write nothing) and gives
/// it a LimitRange with a default memory limit; then waits (up to 10 s) until RBAC lets
/// `pando` read the binding. What exists is kept.
pub async fn bind_adapter(admin: &Client, ns: &str) -> Result<()> {
    use k8s_openapi::api::rbac::v1::RoleBinding;
    use kube::Api;
    use kube::api::PostParams;
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": { "name": ADAPTER_BINDING },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": NAMESPACE_ROLE },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "pando" }],
    }))?;
    match Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    // And the LimitRange the adapter gives an app namespace: the admission policy refuses
    // `pando` a pod without a memory limit (`pods.memory-limit`).
    let limits: k8s_openapi::api::core::v1::LimitRange =
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "pando-app" },
            "spec": { "limits": [{ "type": "Container", "default": { "memory": "64Mi" } }] },
        }))?;
    match Api::<k8s_openapi::api::core::v1::LimitRange>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &limits)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    let pando = Api::<RoleBinding>::namespaced(client(Identity::Pando).await?, ns);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while let Err(e) = pando.get(ADAPTER_BINDING).await {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "RBAC did not let pando read its binding in {ns} within 10 s: {e}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbudgeted_widens_the_adapters_budget_and_keeps_the_rest() {
        let config = unbudgeted(KUBERNETES_CONFIG).unwrap();
        let value: serde_json::Value = serde_json::from_str(&config).unwrap();
        let base: serde_json::Value = serde_json::from_str(KUBERNETES_CONFIG).unwrap();
        assert_eq!(value["api_qps"], u32::MAX);
        assert_eq!(value["api_burst"], u32::MAX);
        assert_eq!(value["pod_cidr"], base["pod_cidr"]);
        assert_eq!(value["service_cidr"], base["service_cidr"]);
        assert!(unbudgeted("[]").is_err());
    }

    #[test]
    fn unbudgeted_grants_never_throttle() {
        let grants = unbudgeted_grants(kubernetes_grants().unwrap());
        let rate = grants.kubernetes.unwrap().rate;
        assert!(rate.qps >= 1e6 && rate.burst >= 1_000_000, "{rate:?}");
        let shipped = kubernetes_grants().unwrap().kubernetes.unwrap().rate;
        assert!(
            shipped.qps < 1e6,
            "the shipped grants already never throttle: {shipped:?}"
        );
    }
}
