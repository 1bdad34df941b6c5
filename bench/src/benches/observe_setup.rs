//! The apps an observe pass looks at, made directly as the admin in the
//! shape the Kubernetes adapter's `apply` makes them: namespace
//! `pando-<id>`, the default-deny NetworkPolicy, one headless Service, one
//! bare pod, built by the adapter crate's own `objects` functions (compiled
//! natively). Through the adapter at 5 requests a second, 1,000 apps would
//! take most of an hour to apply.
//!
//! The pods run on a node of the bench's own, `pando-bench-node`: a KWOK
//! node (KWOK manages every node) that is cordoned, so nothing else is
//! scheduled there and the adapter's capacity reports, which skip
//! unschedulable nodes, do not count it; the bench's pods name it in
//! `spec.nodeName`, bypassing the scheduler and the 110-pod limit of the
//! shared nodes other tests use.

use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail, ensure};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use pando_adapter_kubernetes::Config;
use pando_adapter_kubernetes::app::objects;
use pando_adapter_kubernetes::kit::names;
use pando_adapter_sdk::types::{
    BundlePlan, EgressPolicy, NetworkRules, Port, Protocol, ResourceRequirements, Resources,
    WorkloadSpec,
};

use crate::env;

/// The bench's cordoned KWOK node.
pub const NODE: &str = "pando-bench-node";
/// Label on the bench's namespaces and pods, for listing and cleanup.
pub const LABEL: &str = "pando.dev/bench";
/// Its value on observe apps.
pub const LABEL_VALUE: &str = "observe";
/// Requests in flight while setting up or cleaning up.
const CONCURRENCY: usize = 16;

/// The app ids of one run: `bo<run>-<i>`, unique per run so that a
/// previous run's namespaces, still terminating, never collide.
pub fn app_ids(run: &str, from: usize, to: usize) -> Vec<String> {
    (from..to).map(|i| format!("bo{run}-{i:05}")).collect()
}

/// Makes sure the bench's node exists (cordoned), and waits until KWOK
/// has made it Ready.
pub async fn ensure_node(admin: &Client) -> Result<()> {
    let nodes: Api<Node> = Api::all(admin.clone());
    if nodes.get_opt(NODE).await?.is_none() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": NODE,
                "labels": {
                    "type": "kwok", LABEL: "true",
                    "kubernetes.io/hostname": NODE,
                    "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                },
                "annotations": { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
            },
            "spec": { "unschedulable": true },
            "status": {
                "capacity": { "cpu": "1000", "memory": "4Ti", "pods": "20000" },
                "allocatable": { "cpu": "1000", "memory": "4Ti", "pods": "20000" },
            },
        }))?;
        nodes.create(&PostParams::default(), &node).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let node = nodes.get(NODE).await?;
        let ready = node
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("KWOK did not make node {NODE} Ready within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Whether namespace `name` is there to use: `true` when it exists,
/// `false` when it does not (any earlier one of that name, still
/// terminating after a previous run's cleanup, has gone: waited for up to
/// two minutes).
pub async fn namespace_ready(admin: &Client, name: &str) -> Result<bool> {
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match namespaces.get_opt(name).await? {
            None => return Ok(false),
            Some(ns) if ns.metadata.deletion_timestamp.is_none() => return Ok(true),
            Some(_) if Instant::now() > deadline => {
                bail!("namespace {name} is still terminating after 2 minutes")
            }
            Some(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// A benchmark's namespace `name`, made when missing, with `pando` bound in
/// it through the adapter's namespace role; with `pods`, once it has the
/// `default` ServiceAccount that pod admission needs (up to 30 s).
pub async fn bench_namespace(admin: &Client, name: &str, pods: bool) -> Result<()> {
    if !namespace_ready(admin, name).await? {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &ns)
            .await?;
    }
    crate::env::bind_adapter(admin, name).await?;
    if !pods {
        return Ok(());
    }
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), name);
    let deadline = Instant::now() + Duration::from_secs(30);
    while accounts.get_opt("default").await?.is_none() {
        ensure!(
            Instant::now() < deadline,
            "{name} has no `default` ServiceAccount after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Creates the apps `ids`, `CONCURRENCY` at a time.
pub async fn create_apps(admin: &Client, ids: &[String]) -> Result<()> {
    let config = Config::parse(env::KUBERNETES_CONFIG).map_err(|e| anyhow!("config: {e:?}"))?;
    futures::stream::iter(ids.iter().map(|id| create_app(admin, &config, id)))
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// One app, as the adapter's `apply` of a one-workload plan makes it.
async fn create_app(admin: &Client, config: &Config, id: &str) -> Result<()> {
    let sdk = |e: pando_adapter_sdk::types::Error| anyhow!("building app {id}: {e:?}");
    let plan = plan(id);
    let ns_name = names::app_namespace(id).map_err(sdk)?;
    let mut ns = objects::namespace(&ns_name, id).map_err(sdk)?;
    label(&mut ns.metadata);
    let policy = objects::network_policy(config, &plan).map_err(sdk)?;
    let service = objects::service(id, &plan.workloads[0]).map_err(sdk)?;
    let mut pod = objects::pod(config, &plan, &plan.workloads[0]).map_err(sdk)?;
    label(&mut pod.metadata);
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = Some(NODE.into());
    }

    let pp = PostParams::default();
    Api::<Namespace>::all(admin.clone())
        .create(&pp, &ns)
        .await?;
    Api::<NetworkPolicy>::namespaced(admin.clone(), &ns_name)
        .create(&pp, &policy)
        .await?;
    Api::<Service>::namespaced(admin.clone(), &ns_name)
        .create(&pp, &service)
        .await?;
    // A pod is refused until the namespace's `default` ServiceAccount
    // exists, which the controller manager makes moments later.
    let pods: Api<Pod> = Api::namespaced(admin.clone(), &ns_name);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match pods.create(&pp, &pod).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() < deadline => {
                tracing::debug!(app = id, error = %e, "creating the pod; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn label(meta: &mut ObjectMeta) {
    meta.labels
        .get_or_insert_with(Default::default)
        .insert(LABEL.into(), LABEL_VALUE.into());
}

/// A one-workload plan, as core would send it.
fn plan(id: &str) -> BundlePlan {
    BundlePlan {
        id: id.into(),
        revision: "1".into(),
        workloads: vec![WorkloadSpec {
            name: "web".into(),
            image: "registry.invalid/pando/bench:1".into(),
            digest: Some(
                "sha256:0000000000000000000000000000000000000000000000000000000000000000".into(),
            ),
            command: vec![],
            args: vec![],
            env: vec![],
            ports: vec![Port {
                name: Some("http".into()),
                port: 8080,
                protocol: Protocol::Tcp,
            }],
            resources: ResourceRequirements {
                requests: Resources {
                    cpu_millis: 10,
                    memory_bytes: 16 << 20,
                },
                limits: None,
            },
            mounts: vec![],
        }],
        volumes: vec![],
        network: NetworkRules {
            egress: EgressPolicy::Open,
        },
        pull_credentials: vec![],
    }
}

/// Waits until `n` of the bench's pods run (KWOK marks them); how many do.
pub async fn wait_running(admin: &Client, n: usize, limit: Duration) -> Result<usize> {
    let pods: Api<Pod> = Api::all(admin.clone());
    let lp = ListParams::default()
        .labels(&format!("{LABEL}={LABEL_VALUE}"))
        .fields("status.phase=Running");
    let deadline = Instant::now() + limit;
    loop {
        let running = pods.list_metadata(&lp).await?.items.len();
        if running >= n || Instant::now() > deadline {
            return Ok(running);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Deletes every namespace the bench made for observe apps (this run's
/// and any a failed run left), `CONCURRENCY` at a time; the namespace
/// controller removes what is in them. Returns how many.
pub async fn delete_apps(admin: &Client) -> Result<usize> {
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let lp = ListParams::default().labels(&format!("{LABEL}={LABEL_VALUE}"));
    let names: Vec<String> = namespaces
        .list_metadata(&lp)
        .await?
        .items
        .into_iter()
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .filter_map(|n| n.metadata.name)
        .collect();
    let count = names.len();
    let dp = DeleteParams::background();
    futures::stream::iter(names.iter().map(|name| {
        let namespaces = namespaces.clone();
        let dp = dp.clone();
        async move {
            match namespaces.delete(name, &dp).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                Err(e) => Err(e),
            }
        }
    }))
    .buffer_unordered(CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await?;
    Ok(count)
}
