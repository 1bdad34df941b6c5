//! The kube-probe adapter, loaded in the host against the test cluster as
//! the restricted `pando` identity, and what its tests set up.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Namespace, Pod, PodSpec};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use pando_host::{Adapter, CallContext, CallError, Grants, Host, LoadOptions};

use crate::cluster::{self, Identity};
use crate::components;

/// Grants for the probe's tests: app namespaces `pando-*`, read-only
/// nodes, namespaces by name, PVs through claims.
pub const GRANTS: &str = r#"
kubernetes:
  rate: {qps: 50, burst: 50}
  max_body_bytes: 65536
  rules:
  - verbs: [get, list, watch, create, update, patch, delete]
    resources: [pods, secrets, configmaps, persistentvolumeclaims]
    namespaces: ["pando-*"]
    except: [pando-system]
  - verbs: [get]
    resources: [pods/log]
    namespaces: ["pando-*"]
  - verbs: [get, create]
    resources: [pods/exec]
    namespaces: ["pando-*"]
  - verbs: [get, list, watch]
    resources: [nodes]
    cluster: true
  - verbs: [create, get, delete]
    resources: [namespaces]
    cluster: true
    names: ["pando-*"]
  - verbs: [get, patch, delete]
    resources: [persistentvolumes]
    cluster: true
  - verbs: [get]
    resources: [namespaces]
    cluster: true
    names: [default]
"#;

/// The compile cache the probe's tests share: the probe is compiled once
/// per test run, not once per test. (The cache's own tests use fresh
/// directories.)
pub fn shared_cache() -> std::path::PathBuf {
    components::repo_root().join("target/test-compile-cache")
}

/// The probe, loaded with `grants` and a client acting as `pando`.
pub async fn load(grants: &str) -> (Adapter, Host) {
    let grants = Grants::from_text("test grants", grants).expect("test grants parse");
    load_as_pando(&components::kube_probe(), grants, "{}").await
}

/// A component loaded in a host sharing the tests' compile cache, reaching
/// the test cluster as the restricted `pando` identity within `grants`.
pub async fn load_as_pando(
    component: &std::path::Path,
    grants: Grants,
    config: &str,
) -> (Adapter, Host) {
    load_as_pando_cached(component, grants, config, None).await
}

/// [`load_as_pando`], its reads at any version answered from `cache` when
/// given.
pub async fn load_as_pando_cached(
    component: &std::path::Path,
    grants: Grants,
    config: &str,
    cache: Option<std::sync::Arc<pando_host::kubecache::WatchCache>>,
) -> (Adapter, Host) {
    load_as_pando_with(
        component,
        LoadOptions {
            grants,
            config: config.into(),
            kubernetes_cache: cache,
            ..LoadOptions::default()
        },
    )
    .await
}

/// [`load_as_pando`] with `options` (its Kubernetes client set to the
/// `pando` identity's): a name of its own, limits, a cache.
pub async fn load_as_pando_with(
    component: &std::path::Path,
    options: LoadOptions,
) -> (Adapter, Host) {
    let host = Host::builder()
        .cache_dir(shared_cache())
        .build()
        .expect("host builds");
    let client = cluster::client(Identity::Pando)
        .await
        .expect("a client for the pando identity");
    let adapter = host
        .load_file(
            component,
            LoadOptions {
                kubernetes: Some(client),
                ..options
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{} loads: {e}", component.display()));
    (adapter, host)
}

/// A call context with a generous deadline.
pub fn ctx() -> CallContext {
    CallContext::default().with_timeout(Duration::from_secs(60))
}

/// Runs one of the probe's operations (`plan.id`, see its crate docs); its
/// result (`location`) or the error.
pub async fn op(adapter: &Adapter, id: &str) -> Result<String, CallError> {
    adapter
        .apply(&ctx(), &crate::plans::plan(id, &[]))
        .await
        .map(|h| h.location)
}

/// A namespace `pando-<unique>` made by the admin (the probe's grants
/// reach `pando-*`), deleted on drop of the returned guard's `delete`.
pub async fn app_namespace(prefix: &str) -> cluster::TestNamespace {
    let admin = cluster::client(Identity::Admin)
        .await
        .expect("admin client");
    cluster::create_adapter_namespace(&admin, &format!("pando-{prefix}"))
        .await
        .expect("creating a pando-* namespace")
}

/// Makes sure a namespace exists (admin).
pub async fn ensure_namespace(name: &str) {
    let admin = cluster::client(Identity::Admin)
        .await
        .expect("admin client");
    let api: Api<Namespace> = Api::all(admin);
    if api
        .get_opt(name)
        .await
        .expect("reading namespace")
        .is_none()
    {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        api.create(&PostParams::default(), &ns)
            .await
            .expect("creating namespace");
    }
    // The probe acts as the adapter would in a namespace of its own.
    cluster::bind_adapter(name)
        .await
        .expect("the adapter's binding");
}

/// A bare pod with one container named `container`, created by the admin
/// in `namespace` and run by KWOK.
pub async fn running_pod(namespace: &str, name: &str, container: &str) -> Pod {
    let admin = cluster::client(Identity::Admin)
        .await
        .expect("admin client");
    let pods: Api<Pod> = Api::namespaced(admin, namespace);
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            containers: vec![Container {
                name: container.into(),
                image: Some("registry.invalid/pando/test:1".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("creating the pod");
    tokio::time::timeout(
        Duration::from_secs(60),
        await_condition(pods.clone(), name, conditions::is_pod_running()),
    )
    .await
    .unwrap_or_else(|_| panic!("pod {namespace}/{name} did not run within 60 s"))
    .expect("watching the pod")
    .expect("the pod exists")
}
