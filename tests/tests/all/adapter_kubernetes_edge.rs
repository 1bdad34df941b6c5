//! The Kubernetes adapter's edge (R-174) against the real test cluster: the
//! controller manager makes the Deployment's ReplicaSet and pods, the
//! scheduler places them on the KWOK nodes, KWOK runs them. The adapter
//! runs as the `pando` identity with the grants it ships with.
//!
//! Every edge lives in the one edge namespace, which goes with the last
//! edge: the tests here take [`SERIAL`] so that one test's removal does not
//! delete the namespace under another's edge; `real_node_edge` makes edges
//! too, and both take [`ka::edge_namespace_lock`] across processes.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use pando_host::types::{EdgePlan, EdgeState, EnvVar, ResourceRequirements, Resources};
use pando_host::{Adapter, Host, LoadOptions};
use pando_tests::cluster::{self, Identity};
use pando_tests::kubernetes_adapter::{self as ka, CONFIG, WAIT, admin, audit_mark, ctx, requests};
use tokio::sync::Mutex;

/// The edge namespace of [`CONFIG`] (the default).
const NS: &str = "pando-edge";

/// One edge test at a time (see the module doc).
static SERIAL: Mutex<()> = Mutex::const_new(());

/// The adapter with `config` instead of [`CONFIG`].
async fn load_with(config: &str) -> (Adapter, Host) {
    let host = Host::builder()
        .cache_dir(pando_tests::components::repo_root().join("target/test-compile-cache"))
        .build()
        .expect("host builds");
    let client = cluster::client(Identity::Pando)
        .await
        .expect("a client for the pando identity");
    let adapter = host
        .load_file(
            &ka::component(),
            LoadOptions {
                grants: ka::grants(),
                config: config.into(),
                kubernetes: Some(client),
                ..LoadOptions::default()
            },
        )
        .await
        .expect("the Kubernetes adapter loads");
    (adapter, host)
}

/// An edge plan named `name`.
fn edge_plan(name: &str, replicas: Option<u32>) -> EdgePlan {
    EdgePlan {
        name: name.into(),
        image: "registry.example.com/pando-edge:1".into(),
        command: vec!["/edge".into()],
        args: vec!["--serve".into()],
        env: vec![EnvVar {
            name: "PANDO_EDGE".into(),
            value: name.into(),
        }],
        replicas,
        http_port: 8080,
        https_port: 8443,
        resources: ResourceRequirements {
            requests: Resources {
                cpu_millis: 100,
                memory_bytes: 64 << 20,
            },
            limits: None,
        },
    }
}

/// A unique edge name (short enough for `pando-edge-<name>`).
fn edge_name(prefix: &str) -> String {
    let mut name = cluster::unique_name(prefix);
    name.truncate(50);
    name.trim_end_matches('-').to_owned()
}

/// Waits until `want` holds of the edge's state, and returns it.
async fn wait_state(a: &Adapter, name: &str, want: impl Fn(&EdgeState) -> bool) -> EdgeState {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let state = a.observe_edge(&ctx(), name).await.expect("observe_edge");
        if want(&state) {
            return state;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "edge {name} did not reach the state wanted within {} s: {state:?}",
            WAIT.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until Deployment `name` is rolled out and its status settled, and
/// returns it.
async fn wait_rolled_out(name: &str) -> Deployment {
    let api = Api::<Deployment>::namespaced(admin().await, NS);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let d = api.get(name).await.expect("the Deployment");
        let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        if let Some(s) = &d.status
            && s.observed_generation == d.metadata.generation
            && s.ready_replicas == Some(want)
            && s.available_replicas == Some(want)
            && s.updated_replicas == Some(want)
            && s.replicas == Some(want)
        {
            return d;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Deployment {name} not rolled out within {} s: {:?}",
            WAIT.as_secs(),
            d.status
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Removes the edge through the adapter, ignoring errors (cleanup).
async fn cleanup(a: &Adapter, name: &str) {
    let _ = a.remove_edge(&ctx(), name).await;
}

/// Whether the edge namespace is gone or going.
async fn namespace_going() -> bool {
    match Api::<Namespace>::all(admin().await)
        .get_opt(NS)
        .await
        .expect("reading the edge namespace")
    {
        None => true,
        Some(n) => n.metadata.deletion_timestamp.is_some(),
    }
}

#[tokio::test]
async fn r174_apply_edge_makes_a_spread_deployment_a_budget_and_a_load_balancer() {
    let _serial = SERIAL.lock().await;
    let _edge = ka::edge_namespace_lock().await;
    let (a, _h) = ka::load().await;
    let name = edge_name("edge-lb");
    let object = format!("pando-edge-{name}");
    assert!(a.capabilities(&ctx()).await.expect("capabilities").edge);

    // A plan asking for one replica still gets two.
    a.apply_edge(&ctx(), &edge_plan(&name, Some(1)))
        .await
        .expect("apply_edge");
    let c = admin().await;
    let n = Api::<Namespace>::all(c.clone()).get(NS).await.expect("ns");
    assert_eq!(
        n.metadata.labels.unwrap_or_default()["app.kubernetes.io/managed-by"],
        "pando"
    );
    let d = Api::<Deployment>::namespaced(c.clone(), NS)
        .get(&object)
        .await
        .expect("the Deployment");
    let spec = d.spec.clone().expect("spec");
    assert!(spec.replicas.unwrap_or(0) >= 2, "{:?}", spec.replicas);
    let pod_spec = spec.template.spec.expect("pod spec");
    let affinity = serde_json::to_string(&pod_spec.affinity).expect("json");
    assert!(
        affinity.contains("preferredDuringScheduling")
            && affinity.contains("kubernetes.io/hostname"),
        "{affinity}"
    );
    assert_eq!(
        pod_spec.containers[0].image.as_deref(),
        Some("registry.example.com/pando-edge:1")
    );
    let pdb = Api::<PodDisruptionBudget>::namespaced(c.clone(), NS)
        .get(&object)
        .await
        .expect("the PodDisruptionBudget");
    let pdb_spec = serde_json::to_string(&pdb.spec).expect("json");
    assert!(pdb_spec.contains(r#""minAvailable":1"#), "{pdb_spec}");
    let services = Api::<Service>::namespaced(c.clone(), NS);
    let svc = services.get(&object).await.expect("the Service");
    assert_eq!(
        svc.spec.clone().and_then(|s| s.type_).as_deref(),
        Some("LoadBalancer")
    );

    // The pods run (KWOK); without a load-balancer controller the Service
    // has no address, so the edge does not serve, and says why.
    let state = wait_state(&a, &name, |s| s.ready_replicas >= 2).await;
    assert_eq!(state.desired_replicas, 2);
    assert!(!state.serving, "{state:?}");
    assert!(state.address.is_none());
    assert!(state.message.contains("address"), "{}", state.message);
    let pods = Api::<Pod>::namespaced(c.clone(), NS)
        .list(&ListParams::default().labels(&format!("pando.dev/edge={name}")))
        .await
        .expect("pods");
    assert_eq!(pods.items.len(), 2);

    // A load balancer answers: the edge serves at its address.
    let status = serde_json::json!({ "status": { "loadBalancer": { "ingress": [{ "ip": "192.0.2.10" }] } } });
    services
        .patch_status(&object, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("patching the Service's status");
    let state = a.observe_edge(&ctx(), &name).await.expect("observe_edge");
    assert!(state.serving, "{state:?}");
    assert_eq!(state.address.as_deref(), Some("192.0.2.10"));
    assert!(state.message.is_empty(), "{}", state.message);

    // Listed; no volumes.
    let edges = a.edges(&ctx()).await.expect("edges");
    assert!(edges.contains(&name), "{edges:?}");
    assert!(
        a.edge_volumes(&ctx())
            .await
            .expect("edge_volumes")
            .is_empty()
    );

    // O-41: applied again, nothing is written. The resourceVersion moves
    // with the controller's status updates, so it is compared once the
    // rollout is complete; the generation and the writes the adapter sent
    // tell too.
    let before = wait_rolled_out(&object).await;
    let mark = audit_mark();
    a.apply_edge(&ctx(), &edge_plan(&name, Some(1)))
        .await
        .expect("apply_edge again");
    let writes: Vec<_> = requests(mark, NS)
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert!(
        writes.is_empty(),
        "a satisfied edge writes nothing: {writes:?}"
    );
    let after = Api::<Deployment>::namespaced(c.clone(), NS)
        .get(&object)
        .await
        .expect("the Deployment");
    assert_eq!(before.metadata.generation, after.metadata.generation);
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "a quiet Deployment keeps its resourceVersion"
    );
    // A changed plan replaces the objects in place: the Service keeps its
    // cluster IP and its load balancer's address.
    let cluster_ip = services
        .get(&object)
        .await
        .expect("the Service")
        .spec
        .and_then(|s| s.cluster_ip);
    let mut changed = edge_plan(&name, Some(3));
    changed.https_port = 9443;
    a.apply_edge(&ctx(), &changed)
        .await
        .expect("apply_edge changed");
    let svc = services.get(&object).await.expect("the Service");
    let spec = svc.spec.expect("spec");
    assert_eq!(spec.cluster_ip, cluster_ip);
    assert!(
        spec.ports
            .unwrap_or_default()
            .iter()
            .any(|p| p.port == 9443),
        "the new port"
    );
    let state = wait_state(&a, &name, |s| s.desired_replicas == 3).await;
    assert!(state.serving, "{state:?}");
    assert_eq!(state.address.as_deref(), Some("192.0.2.10"));

    // Removed: everything made for it, and the namespace with the last edge.
    a.remove_edge(&ctx(), &name).await.expect("remove_edge");
    assert!(
        Api::<Deployment>::namespaced(c.clone(), NS)
            .get_opt(&object)
            .await
            .expect("reading")
            .is_none()
    );
    assert!(
        Api::<PodDisruptionBudget>::namespaced(c.clone(), NS)
            .get_opt(&object)
            .await
            .expect("reading")
            .is_none()
    );
    assert!(services.get_opt(&object).await.expect("reading").is_none());
    assert!(
        namespace_going().await,
        "the namespace goes with the last edge"
    );
    assert!(!a.edges(&ctx()).await.expect("edges").contains(&name));
}

#[tokio::test]
async fn r174_replicas_sharing_a_node_are_a_warning_and_node_ports_serve() {
    let _serial = SERIAL.lock().await;
    let _edge = ka::edge_namespace_lock().await;
    // The scheduler spreads replicas; a node selector only one node matches
    // forces them together.
    let config = CONFIG.replace(
        '}',
        r#", "node_selector": "kubernetes.io/hostname=kwok-node-0", "edge_service_type": "NodePort"}"#,
    );
    let (a, _h) = load_with(&config).await;
    let name = edge_name("edge-np");
    a.apply_edge(&ctx(), &edge_plan(&name, None))
        .await
        .expect("apply_edge");
    let svc = Api::<Service>::namespaced(admin().await, NS)
        .get(&format!("pando-edge-{name}"))
        .await
        .expect("the Service");
    assert_eq!(svc.spec.and_then(|s| s.type_).as_deref(), Some("NodePort"));
    let state = wait_state(&a, &name, |s| s.ready_replicas >= 2).await;
    assert!(state.serving, "NodePort always has an address: {state:?}");
    assert!(
        state
            .address
            .as_deref()
            .unwrap_or("")
            .contains("node ports"),
        "{state:?}"
    );
    assert_eq!(state.warnings.len(), 1, "{state:?}");
    let warning = &state.warnings[0];
    assert!(
        warning.contains("kwok-node-0") && warning.contains("takes the edge down"),
        "{warning}"
    );
    cleanup(&a, &name).await;
}

#[tokio::test]
async fn r174_the_namespace_stays_until_the_last_edge_goes() {
    let _serial = SERIAL.lock().await;
    let _edge = ka::edge_namespace_lock().await;
    let (a, _h) = ka::load().await;
    let first = edge_name("edge-one");
    let second = edge_name("edge-two");
    for n in [&first, &second] {
        a.apply_edge(&ctx(), &edge_plan(n, None))
            .await
            .expect("apply_edge");
    }
    let edges = a.edges(&ctx()).await.expect("edges");
    assert!(
        edges.contains(&first) && edges.contains(&second),
        "{edges:?}"
    );

    a.remove_edge(&ctx(), &first).await.expect("remove_edge");
    assert!(!namespace_going().await, "another edge remains");
    let edges = a.edges(&ctx()).await.expect("edges");
    assert!(
        !edges.contains(&first) && edges.contains(&second),
        "{edges:?}"
    );

    a.remove_edge(&ctx(), &second).await.expect("remove_edge");
    assert!(
        namespace_going().await,
        "the namespace goes with the last edge"
    );
}

#[tokio::test]
async fn r174_observing_an_unknown_edge_is_not_found() {
    let (a, _h) = ka::load().await;
    let err = a
        .observe_edge(&ctx(), "no-such-edge")
        .await
        .expect_err("not found");
    assert_eq!(err.kind(), "not-found", "{err}");
    assert!(err.to_string().contains("no-such-edge"), "{err}");
}
